/**
 * What a tools/call says when it fails, on the SDK's path and the direct one alike: refusals as they
 * are, anything else a fixed text, nothing of the error's own leaked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Envelope } from '../domain/envelope.ts';
import { ChainFrozenError } from '../services/errors.ts';
import { ProxyRefusal } from '../services/proxy-call.ts';
import { StorageUnavailableError } from '../store/db.ts';
import { callError } from './proxy-server.ts';

const SECRET = 'row 42: api_key=svc_live_SECRET';

test('a refusal is said with its code, text and data; any other failure answers a fixed text', () => {
  const logged: unknown[] = [];
  const log = {
    warn: (...args: unknown[]) => logged.push(args),
    error: (...args: unknown[]) => logged.push(args),
  };
  const plain = ({ code, message, data }: ProtocolError) => ({ code, message, data });
  const upstream = new ProtocolError(-32602, 'Unknown tool');
  assert.equal(callError(upstream, log), upstream);
  const envelope = { status: 'denied' } as Envelope;
  assert.deepEqual(plain(callError(new ProxyRefusal({ kind: 'denied', envelope }), log)), {
    code: -32003,
    message: 'Denied by policy',
    data: { service: { status: 'denied' } },
  });
  const failure = { code: -32001, message: 'Request timed out', outcome: 'unknown' as const };
  assert.deepEqual(plain(callError(new ProxyRefusal({ kind: 'call_failed', failure }), log)), {
    code: -32001,
    message: 'Request timed out',
    data: { outcome: 'unknown' },
  });
  assert.deepEqual(plain(callError(new StorageUnavailableError(new Error(SECRET)), log)), {
    code: -32000,
    message: 'Service Unavailable: storage is unreachable, retry later',
    data: undefined,
  });
  assert.deepEqual(plain(callError(new ChainFrozenError(), log)), {
    code: -32000,
    message:
      "Service Unavailable: the workspace's evidence chain failed its check and is frozen until an operator re-anchors it",
    data: undefined,
  });
  const internal = callError(new TypeError(SECRET), log);
  assert.equal(internal.code, -32603);
  assert.equal(internal.message, 'Internal error');
  const { referenceId } = internal.data as { referenceId: string };
  assert.match(referenceId, /^[0-9a-f-]{36}$/);
  assert.ok(!JSON.stringify(plain(internal)).includes('SECRET'));
  // Both were logged, the second under the reference the client got; neither with the error's text.
  assert.equal(logged.length, 2);
  assert.ok(JSON.stringify(logged[1]).includes(referenceId));
  assert.ok(!JSON.stringify(logged).includes('SECRET'));
});
