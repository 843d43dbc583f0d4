/**
 * Round trips to PostgreSQL per submission over the Core API (issue 43): everything the request sends,
 * from the key's check to the other instances' notice, not only what runs under the chain lock
 * (test/submission-round-trips.test.ts). Counted exactly, in this process: each query a pg client
 * sends is one round trip (the driver sends the next only once the last is answered). The service
 * runs no workers (ROLE=api) on a clock that stands still (one rate window), so that nothing else
 * sends anything while a submission is counted.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { postgres } from './support/backends.ts';
import { startTestService, TestClock, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const CONFIG = `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: second@acme.test, name: Second, role: approver }
groups:
  finance: [admin@acme.test, second@acme.test]
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: send_invoice, classification: approval }
`;

/** Each query any pg client of this process sends: its text and parameters. */
const sent: { text: string; params: unknown[] }[] = [];
const originalQuery = pg.Client.prototype.query;

function countQueries() {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first, values] = args as [string | { text: string; values?: unknown[] }, unknown[] | undefined];
    if (typeof first === 'string') sent.push({ text: first, params: values ?? [] });
    else sent.push({ text: first.text, params: first.values ?? [] });
    return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
}

describe('round trips per submission over the API (postgres)', { skip: postgres.skip }, () => {
  let t: TestService;
  let key: string;
  before(async () => {
    countQueries();
    t = await startTestService(postgres, { clock: new TestClock({ at: Date.now() }), env: { ROLE: 'api' } });
    ({ key } = await t.workspace({ config: CONFIG }));
  });
  after(async () => {
    pg.Client.prototype.query = originalQuery;
    await t?.close();
  });

  /** A submission's round trips, once its workspace's rules are compiled (as after its first). */
  const roundTrips = async (toolName: string) => {
    const submit = () =>
      t.service.app.inject({
        method: 'POST',
        url: '/api/v1/holds',
        headers: { authorization: `Bearer ${key}` },
        payload: {
          tool_name: toolName,
          arguments: { amount: 5 },
          agent_identity: { id: 'agent-1' },
          idempotency_key: randomUUID(),
        },
      });
    assert.equal((await submit()).statusCode, 201);
    await toldOthers();
    const from = sent.length;
    const answer = await submit();
    assert.equal(answer.statusCode, 201, answer.body);
    const marked = await toldOthers();
    // The marker's statement counts when it carried the request's notice too (told in the same turn).
    const to = sent[marked]!.params.length > 2 ? marked + 1 : marked;
    return {
      status: (answer.json() as { status: string }).status,
      texts: sent.slice(from, to).map(({ text }) => text),
    };
  };

  /**
   * Everything told to the other instances so far has been sent: a marker told now, on the same
   * connection and in order, is sent after it. Answers where the marker's statement is in `sent`.
   */
  const toldOthers = () => {
    const marker = `marker-${randomUUID()}`;
    t.service.ctx.holdEvents.publish(marker, 'none');
    return until('the marker to be sent', () => {
      const at = sent.findIndex(({ params }) => params.some((p) => String(p).includes(marker)));
      return at >= 0 ? at : undefined;
    });
  };

  // Was 7: key read, quota upsert, BEGIN, locked read, writes, COMMIT, pg_notify.
  test('auto-allowed: the key read counting the request, BEGIN with the locked read, the writes with the notice and COMMIT', async () => {
    const { status, texts } = await roundTrips('read_balance');
    assert.equal(status, 'allowed');
    assert.equal(texts.length, 3, texts.join('\n---\n'));
    assert.match(texts[0]!, /FROM api_keys.*INSERT INTO rate_windows/s);
    assert.match(texts[1]!, /^BEGIN;\s*SELECT .* FROM lock_for_submission\(/s);
    assert.match(texts[2]!, /^INSERT INTO holds .*SELECT pg_notify\(.*;\s*COMMIT$/s);
  });

  // Was 9: the same seven, and the approvers and the digest windows read one after the other.
  test('pending: the same, and one more under the lock, reading the approvers and the digest windows together', async () => {
    const { status, texts } = await roundTrips('send_invoice');
    assert.equal(status, 'pending');
    assert.equal(texts.length, 4, texts.join('\n---\n'));
    assert.match(
      texts[2]!,
      /FROM members.*;\s*SELECT w\.digest_minutes .*FROM workspaces w\s+LEFT JOIN notifications/s,
    );
    assert.match(texts[3]!, /^INSERT INTO holds .*SELECT pg_notify\(.*;\s*COMMIT$/s);
  });
});
