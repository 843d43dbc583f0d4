/** What a directly answered tools/call says when it fails: refusals as they are, nothing else leaked. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtocolError } from '@modelcontextprotocol/server';
import { StorageUnavailableError } from '../store/db.ts';
import { callError } from './tool-call.ts';

const SECRET = 'row 42: api_key=svc_live_SECRET';

test('a refusal keeps its code, text and data; any other failure answers a fixed text', () => {
  const logged: unknown[] = [];
  const log = {
    warn: (...args: unknown[]) => logged.push(args),
    error: (...args: unknown[]) => logged.push(args),
  };
  assert.deepEqual(
    callError(new ProtocolError(-32003, 'Denied by policy', { service: { status: 'denied' } }), log),
    {
      code: -32003,
      message: 'Denied by policy',
      data: { service: { status: 'denied' } },
    },
  );
  assert.deepEqual(callError(new StorageUnavailableError(new Error(SECRET)), log), {
    code: -32000,
    message: 'Service Unavailable: storage is unreachable, retry later',
  });
  const internal = callError(new TypeError(SECRET), log);
  assert.equal(internal.code, -32603);
  assert.equal(internal.message, 'Internal error');
  assert.match((internal.data as { referenceId: string }).referenceId, /^[0-9a-f-]{36}$/);
  assert.ok(!JSON.stringify(internal).includes('SECRET'));
  // Both were logged, the second under the reference the client got; neither with the error's text.
  assert.equal(logged.length, 2);
  assert.ok(JSON.stringify(logged[1]).includes((internal.data as { referenceId: string }).referenceId));
  assert.ok(!JSON.stringify(logged).includes('SECRET'));
});
