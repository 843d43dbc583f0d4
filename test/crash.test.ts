/**
 * The crash harness: the service under a mixed load (new holds, retried idempotency keys, four-eyes
 * decisions by decision link, webhook deliveries) is killed with SIGKILL at random moments, round
 * after round. Afterwards: no acknowledged hold lost and none duplicated by a retried key; no
 * acknowledged decision lost, none counted twice; every decision has exactly one evidence entry;
 * the chains verify; every webhook event is delivered.
 *
 * CRASH_SEED repeats a run (the seed is printed); CRASH_ROUNDS sets the number of kills.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/runtime.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends, type Storage } from './support/backends.ts';
import { type Answer, call, submission } from './support/http.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import {
  killServerProcesses,
  type ServerProcess,
  startServerProcess,
  storageSettings,
} from './support/server-process.ts';
import { sleep } from './support/wait.ts';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 8);
const APPROVERS = ['ann@acme.test', 'bob@acme.test'];

after(killServerProcesses);

/** A small seeded generator (mulberry32), so a failing run can be repeated with its seed. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Submission {
  workspace: number;
  body: ReturnType<typeof submission>;
  answer?: Answer;
}

interface Decision {
  holdId: string;
  workspace: number;
  member: string;
  verdict: 'approve' | 'reject';
  path: string;
}

describe('crash harness: kill -9 at random moments under load', { timeout: 300_000 }, () => {
  for (const backend of backends) {
    test(`${ROUNDS} kills on ${backend.name}`, { skip: backend.skip }, async (t) => {
      const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);
      t.diagnostic(`CRASH_SEED=${seed}`);
      const rand = random(seed);
      const storage = await backend.create();
      const hook = await startReceiver();
      try {
        await run(t, storage, hook, rand);
      } finally {
        await killServerProcesses();
        await hook.close();
        await storage.drop();
      }
    });
  }
});

async function run(t: test.TestContext, storage: Storage, hook: Receiver, rand: () => number) {
  const settings = {
    PUBLIC_URL: 'http://approvals.test',
    ALLOW_PRIVATE_TARGETS: 'true',
    TRUST_PROXY: 'true',
  };
  const withContext = async <T>(work: (ctx: Awaited<ReturnType<typeof openContext>>) => Promise<T>) => {
    const ctx = await openContext(
      loadConfig({ ...storageSettings(storage), ...settings, PORT: '0', LOG_LEVEL: 'silent' }),
    );
    try {
      return await work(ctx);
    } finally {
      await ctx.db.close();
    }
  };
  // A workspace per two rounds keeps each within its 120-a-minute quota (kept across restarts on PostgreSQL).
  const workspaces: { workspace: Workspace; key: string }[] = await withContext(async (ctx) => {
    const made = [];
    for (let i = 0; i < Math.ceil(ROUNDS / 2) + 1; i++) {
      const workspace = await createWorkspace(ctx, {
        slug: `crash-${i}-${Date.now().toString(36)}`,
        name: 'Acme',
      });
      await applyConfig(
        ctx,
        workspace,
        parseConfig(`
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
  - { email: bob@acme.test, name: Bob, role: approver }
tools:
  - { connection: SDK, tool: ship_it, classification: allow }
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Four eyes, tool: pay, effect: approval, approvers: [ann@acme.test, bob@acme.test], approvals_required: 2 }
webhook: { url: "${hook.url}" }
`),
      );
      made.push({ workspace, key: (await createApiKey(ctx, { workspace, env: 'live' })).key });
    }
    return made;
  });

  const acknowledged: Submission[] = [];
  const cutOff: Submission[] = [];
  const duplicates: string[] = [];
  const decided: Decision[] = [];
  const undecided: Decision[] = [];
  const minted = new Set<string>();
  const failures: string[] = [];

  // Decision links for the waiting four-eyes holds acknowledged so far, made while no server runs.
  const mintLinks = () =>
    withContext(async (ctx) => {
      for (const { workspace, answer } of acknowledged) {
        if (answer!.body.status !== 'pending') continue;
        const { workspace: ws } = workspaces[workspace]!;
        const hold = await findHold(ctx.db, ws.id, answer!.body.id);
        assert.ok(hold, `acknowledged hold ${answer!.body.id} is lost`);
        if (hold.status !== 'pending') continue;
        for (const email of APPROVERS) {
          if (minted.has(`${hold.id} ${email}`)) continue;
          minted.add(`${hold.id} ${email}`);
          const member = (await findMemberByEmail(ctx.db, ws.id, email))!;
          const link = await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'email' });
          undecided.push({
            holdId: hold.id,
            workspace,
            member: email,
            verdict: rand() < 0.2 ? 'reject' : 'approve',
            path: new URL(link).pathname,
          });
        }
      }
      undecided.sort(() => rand() - 0.5);
    });

  // Each decision from its own client address (the per-IP limit is not what is tested here).
  let client = 0;
  const decide = (server: ServerProcess, decision: Decision) =>
    fetch(`${server.url}${decision.path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': `10.9.${(client >> 8) & 255}.${client++ & 255}`,
      },
      body: `verdict=${decision.verdict}`,
      redirect: 'manual',
    });

  for (let round = 0; round < ROUNDS; round++) {
    await mintLinks();
    const server = await startServerProcess(storage, settings);
    const ws = Math.floor(round / 2);
    const { key } = workspaces[ws]!;
    let killed = false;
    // Until the kill; a failure before it (an unexpected answer) fails the test, one after is the kill's.
    const loop = async (work: () => Promise<unknown>) => {
      while (!killed)
        await work().catch((error: unknown) => {
          if (!killed) failures.push(String(error));
        });
    };
    let submissions = 0;
    const submitter = () =>
      loop(async () => {
        if (submissions++ >= 25) return sleep(5);
        const entry: Submission = {
          workspace: ws,
          body: submission({ tool_name: rand() < 0.6 ? 'pay' : 'ship_it', arguments: { n: rand() } }),
        };
        try {
          entry.answer = await call(server.url, 'POST', '/api/v1/holds', { key, body: entry.body });
        } catch {
          // cut off by the kill
        }
        if (entry.answer?.status === 201) acknowledged.push(entry);
        else if (entry.answer)
          assert.fail(`submission answered ${entry.answer.status}: ${entry.answer.text}`);
        else cutOff.push(entry);
      });
    let retries = 0;
    const retrier = () =>
      loop(async () => {
        const mine = acknowledged.filter((entry) => entry.workspace === ws);
        if (retries++ >= 12 || mine.length === 0) return sleep(5);
        const entry = mine[Math.floor(rand() * mine.length)]!;
        const again = await call(server.url, 'POST', '/api/v1/holds', { key, body: entry.body });
        if (again.status !== 200 || again.body.id !== entry.answer!.body.id)
          duplicates.push(`${entry.body.idempotency_key}: ${again.status} ${again.text}`);
      });
    const decider = () =>
      loop(async () => {
        const decision = undecided.shift();
        if (!decision) return sleep(5);
        try {
          const answer = await decide(server, decision);
          await answer.text();
          if (answer.status === 200) decided.push(decision);
          else if (answer.status === 409)
            undecided.push(decision); // its hold was closed meanwhile, or a cut-off try committed
          else assert.fail(`decision answered ${answer.status}`);
        } catch {
          undecided.push(decision); // cut off: try again after the restart
        }
      });
    const load = Promise.all([submitter(), submitter(), retrier(), decider(), decider()]);
    await sleep(30 + rand() * 400);
    killed = true;
    server.child.kill('SIGKILL');
    assert.deepEqual(await server.exited, { code: null, signal: 'SIGKILL' });
    await load;
  }
  t.diagnostic(
    `${acknowledged.length} holds acknowledged, ${cutOff.length} cut off; ${decided.length} decisions acknowledged`,
  );
  assert.deepEqual(failures, [], 'unexpected answers under load');
  assert.deepEqual(duplicates, [], 'a retried key made another hold or another answer');
  assert.ok(acknowledged.length > 0 && decided.length > 0, 'the load got through between the kills');

  // Restarted for good: what was cut off is sent again, as a client would.
  await mintLinks();
  const server = await startServerProcess(storage, settings);
  for (const entry of cutOff) {
    const again = await call(server.url, 'POST', '/api/v1/holds', {
      key: workspaces[entry.workspace]!.key,
      body: entry.body,
    });
    assert.ok([200, 201].includes(again.status), `retry of a cut-off submission: ${again.text}`);
  }
  for (const decision of undecided.splice(0)) {
    const answer = await decide(server, decision);
    await answer.text();
    assert.ok([200, 409].includes(answer.status), `retry of a decision: ${answer.status}`);
  }
  for (const { key } of workspaces) {
    const verified = await call(server.url, 'GET', '/api/v1/audit/verify', { key });
    assert.equal(verified.body.valid, true, JSON.stringify(verified.body));
  }

  await withContext(async ({ db }) => {
    const ids = workspaces.map(({ workspace }) => workspace.id);
    const inWorkspaces = `workspace_id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`;
    // Holds: every acknowledged one is there, once per idempotency key.
    for (const { workspace, body, answer } of acknowledged) {
      const rows = await db.all<{ id: string }>(
        'SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2',
        [workspaces[workspace]!.workspace.id, body.idempotency_key],
      );
      assert.deepEqual(
        rows.map((row) => row.id),
        [answer!.body.id],
        'an acknowledged hold, exactly once',
      );
    }
    // Decisions: every acknowledged one is there with its verdict.
    for (const decision of decided) {
      const row = await db.one<{ verdict: string }>(
        `SELECT d.verdict FROM hold_decisions d JOIN members m ON m.id = d.member_id
         WHERE d.hold_id = $1 AND m.email = $2`,
        [decision.holdId, decision.member],
      );
      assert.equal(row?.verdict, decision.verdict, `decision of ${decision.member} on ${decision.holdId}`);
    }
    // Each hold counts each member once, agrees with its decisions, and has one evidence entry each.
    const holds = await db.all<{
      id: string;
      status: string;
      received: number;
      approvals: number;
      rejections: number;
      entries: number;
      decisions: number;
    }>(
      `SELECT h.id, h.status, h.approvals_received AS received,
         (SELECT COUNT(*) FROM hold_decisions d WHERE d.hold_id = h.id AND d.verdict = 'approve') AS approvals,
         (SELECT COUNT(*) FROM hold_decisions d WHERE d.hold_id = h.id AND d.verdict = 'reject') AS rejections,
         (SELECT COUNT(*) FROM hold_decisions d WHERE d.hold_id = h.id) AS decisions,
         (SELECT COUNT(*) FROM evidence e WHERE e.workspace_id = h.workspace_id
            AND e.type IN ('hold.approval_recorded', 'hold.approved', 'hold.rejected')
            AND e.data LIKE '%' || h.id || '%') AS entries
       FROM holds h WHERE h.${inWorkspaces} AND h.tool_name = 'pay'`,
      ids,
    );
    for (const hold of holds) {
      const approvals = Number(hold.approvals);
      assert.equal(Number(hold.received), approvals, `${hold.id}: approvals counted`);
      assert.equal(
        Number(hold.entries),
        Number(hold.decisions),
        `${hold.id}: one evidence entry per decision`,
      );
      const expected = Number(hold.rejections) > 0 ? 'rejected' : approvals >= 2 ? 'approved' : 'pending';
      assert.equal(
        hold.status,
        expected,
        `${hold.id}: ${approvals} approvals, ${hold.rejections} rejections`,
      );
    }
    // Webhooks: every event is delivered, and arrived at the receiver. An attempt cut off by a kill
    // keeps its 30 s claim before it is tried again.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const pending = await db.one<{ n: number }>(
        `SELECT COUNT(*) AS n FROM webhook_events WHERE ${inWorkspaces} AND state <> 'delivered'`,
        ids,
      );
      if (Number(pending!.n) === 0) break;
      assert.ok(Date.now() < deadline, `${pending!.n} webhook events still undelivered`);
      await sleep(250);
    }
    const events = await db.all<{ id: string }>(`SELECT id FROM webhook_events WHERE ${inWorkspaces}`, ids);
    const received = new Set(hook.requests.map((request) => String(request.headers['x-service-delivery'])));
    for (const { id } of events) assert.ok(received.has(id), `event ${id} never arrived`);
    const final = holds.filter((hold) => hold.status !== 'pending').length;
    assert.ok(events.length >= final, 'an event for every decided hold');
    t.diagnostic(
      `${holds.length} four-eyes holds, ${final} decided; ${events.length} webhook events delivered`,
    );
  });
  server.child.kill('SIGTERM');
  assert.equal((await server.exited).code, 0);
}
