/**
 * The crash harness: the service under a mixed load (new holds, retried idempotency keys, four-eyes
 * decisions by decision link, webhook deliveries) is crashed at random moments, round after round.
 * Afterwards: no acknowledged hold lost and none duplicated by a retried key; no acknowledged
 * decision lost, none counted twice; every decision has exactly one evidence entry; the chains
 * verify; every webhook event is delivered.
 *
 * Two variants. On every backend the service is killed with SIGKILL. On a private PostgreSQL cluster
 * (test/support/private-postgres.ts) PostgreSQL itself is crashed (`pg_ctl stop -m immediate`) and
 * started again: in some rounds while the service keeps running (it answers 503 `unavailable`
 * meanwhile, which acknowledges nothing, and must be back by itself), in others together with a
 * SIGKILL of the service.
 *
 * CRASH_SEED repeats a run (the seed is printed); CRASH_ROUNDS sets the number of service kills,
 * CRASH_PG_ROUNDS the number of PostgreSQL crashes.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends, type Storage } from './support/backends.ts';
import { type Answer, call, submission } from './support/http.ts';
import {
  type PrivatePostgres,
  privatePostgresSkip,
  startPrivatePostgres,
} from './support/private-postgres.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import {
  killServerProcesses,
  type ServerProcess,
  startServerProcess,
  storageSettings,
} from './support/server-process.ts';
import { sleep, until } from './support/wait.ts';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 8);
const PG_ROUNDS = Number(process.env.CRASH_PG_ROUNDS ?? 4);
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
  /** The round that acknowledged it (named when it is lost). */
  round?: number;
}

interface Decision {
  holdId: string;
  workspace: number;
  member: string;
  verdict: 'approve' | 'reject';
  path: string;
  /** The round that acknowledged it (named when it is lost). */
  round?: number;
}

/**
 * What ends a round: `service`, a SIGKILL of the service; `postgres`, PostgreSQL crashed and started
 * again under the running service, which is then stopped gracefully; `both`, PostgreSQL crashed and
 * the service killed, in a random order.
 */
type Round = 'service' | 'postgres' | 'both';

interface Plan {
  rounds: Round[];
  /** Rounds that share a workspace (each within its 120-a-minute quota). */
  roundsPerWorkspace: number;
  /** The cluster to crash, for `postgres` and `both` rounds. */
  cluster?: PrivatePostgres;
}

const seedOf = (t: test.TestContext) => {
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);
  t.diagnostic(`CRASH_SEED=${seed}`);
  return seed;
};

// Three parts of about 100 s each beside another test file; a busy machine once took 300 s for two and a half.
describe('crash harness: kill -9 at random moments under load', { timeout: 450_000 }, () => {
  for (const backend of backends) {
    test(`${ROUNDS} kills on ${backend.name}`, { skip: backend.skip }, async (t) => {
      const rand = random(seedOf(t));
      const storage = await backend.create();
      const hook = await startReceiver();
      try {
        await run(t, storage, hook, rand, {
          rounds: Array<Round>(ROUNDS).fill('service'),
          roundsPerWorkspace: 2,
        });
      } finally {
        await killServerProcesses();
        await hook.close();
        await storage.drop();
      }
    });
  }

  test(
    `${PG_ROUNDS} PostgreSQL crashes (pg_ctl stop -m immediate) on a private cluster`,
    { skip: privatePostgresSkip },
    async (t) => {
      const rand = random(seedOf(t));
      const cluster = await startPrivatePostgres();
      let hook: Receiver | undefined;
      try {
        hook = await startReceiver();
        // Alternately: PostgreSQL alone under the running service, then PostgreSQL and the service.
        const rounds = Array.from({ length: PG_ROUNDS }, (_, i): Round =>
          i % 2 === 0 ? 'postgres' : 'both',
        );
        await run(t, cluster.storage(), hook, rand, { rounds, roundsPerWorkspace: 1, cluster });
      } catch (error) {
        t.diagnostic(`PostgreSQL log:\n${cluster.log().split('\n').slice(-40).join('\n')}`);
        throw error;
      } finally {
        await killServerProcesses();
        await hook?.close();
        await cluster.cleanup();
      }
    },
  );
});

async function run(t: test.TestContext, storage: Storage, hook: Receiver, rand: () => number, plan: Plan) {
  const settings = {
    PUBLIC_URL: 'http://approvals.test',
    ALLOW_PRIVATE_TARGETS: 'true',
    TRUST_PROXY: 'true',
    // An unexpected 500 logs its cause: the failure messages quote the service's output.
    LOG_LEVEL: 'error',
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
  // Workspaces are shared by `roundsPerWorkspace` rounds, so each stays within its 120-a-minute quota
  // (kept across restarts on PostgreSQL).
  const workspaceCount = Math.ceil(plan.rounds.length / plan.roundsPerWorkspace) + 1;
  const workspaces: { workspace: Workspace; key: string }[] = await withContext(async (ctx) => {
    const made = [];
    for (let i = 0; i < workspaceCount; i++) {
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
  let unavailableAnswers = 0;
  // Submissions answered 503 whose retry found the hold: committed, the answer lost in the crash.
  let committedUnanswered = 0;

  // Decision links for the waiting four-eyes holds acknowledged so far, made while no server runs.
  const mintLinks = () =>
    withContext(async (ctx) => {
      for (const { workspace, answer, round } of acknowledged) {
        if (answer!.body.status !== 'pending') continue;
        const { workspace: ws } = workspaces[workspace]!;
        const hold = await findHold(ctx.db, ws.id, answer!.body.id);
        assert.ok(hold, `hold ${answer!.body.id}, acknowledged in round ${round}, is lost`);
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

  for (let round = 0; round < plan.rounds.length; round++) {
    const kind = plan.rounds[round]!;
    const began = Date.now();
    const cluster = plan.cluster;
    if (kind !== 'service') assert.ok(cluster, `a ${kind} round needs a private PostgreSQL`);
    await mintLinks();
    const linksAtStart = undecided.length;
    const server = await startServerProcess(storage, settings);
    const ws = Math.floor(round / plan.roundsPerWorkspace);
    const { key } = workspaces[ws]!;
    // `killed`: the service was killed, and what fails after is the kill's. `stopped`: the load ends.
    let killed = false;
    let stopped = false;
    // PostgreSQL is away from its crash until the service is ready again; `outages` counts crashes.
    let down = false;
    let outages = 0;
    // A request may be answered 503 `unavailable` if an outage overlapped it (taken before it is sent).
    const overlap = () => {
      const [wasDown, crashes] = [down, outages];
      return (status: number, text: string) => {
        const fine = status === 503 && (wasDown || down || outages !== crashes) && /unavailable/i.test(text);
        if (fine) unavailableAnswers++;
        return fine;
      };
    };
    const unexpected = (what: string, status: number, text: string) =>
      assert.fail(
        `round ${round} (${kind}): ${what} answered ${status}: ${text.slice(0, 300)}\n${server.output().slice(-2000)}`,
      );
    // Until the round ends; a failure before a kill (an unexpected answer) fails the test, one after is the kill's.
    // The pauses below are the load's own pace (a worker with nothing to do looks again 5 ms later,
    // a client pauses 20 ms before it tries again), like the seeded moments of the crashes: no test
    // waits on them for something to happen.
    const loop = async (work: () => Promise<unknown>) => {
      while (!stopped)
        await work().catch((error: unknown) => {
          if (!killed) failures.push(String(error));
        });
    };
    // New submissions and retried keys per round; a PostgreSQL round adds more once it is back.
    let submissions = 0;
    let submitBudget = 25;
    const submitter = () =>
      loop(async () => {
        if (submissions >= submitBudget) return sleep(5);
        submissions++;
        const entry: Submission = {
          workspace: ws,
          body: submission({ tool_name: rand() < 0.6 ? 'pay' : 'ship_it', arguments: { n: rand() } }),
        };
        // Sent again as a client would while the answer is 503 `unavailable`: a try cut off by the
        // crash may have committed, and then the same key answers 200 with that hold.
        for (let tries = 1; ; tries++) {
          const unavailable = overlap();
          let answer: Answer;
          try {
            answer = await call(server.url, 'POST', '/api/v1/holds', { key, body: entry.body });
          } catch (error) {
            cutOff.push(entry); // cut off by the kill (a failure if there was none)
            throw error;
          }
          if (answer.status === 201 || (answer.status === 200 && tries > 1 && answer.body.id)) {
            if (answer.status === 200) committedUnanswered++;
            entry.answer = answer;
            entry.round = round;
            acknowledged.push(entry);
            return;
          }
          if (!unavailable(answer.status, answer.text))
            return unexpected('a submission', answer.status, answer.text);
          if (stopped) return cutOff.push(entry);
          await sleep(20); // a client's pause before it tries again
        }
      });
    let retries = 0;
    let retryBudget = 12;
    const retrier = () =>
      loop(async () => {
        const mine = acknowledged.filter((entry) => entry.workspace === ws);
        if (retries >= retryBudget || mine.length === 0) return sleep(5);
        retries++;
        const entry = mine[Math.floor(rand() * mine.length)]!;
        const unavailable = overlap();
        const again = await call(server.url, 'POST', '/api/v1/holds', { key, body: entry.body });
        if (unavailable(again.status, again.text)) {
          retries--;
          return sleep(20);
        }
        if (again.status !== 200 || again.body.id !== entry.answer!.body.id)
          duplicates.push(`${entry.body.idempotency_key}: ${again.status} ${again.text}`);
      });
    const decider = () =>
      loop(async () => {
        const decision = undecided.shift();
        if (!decision) return sleep(5);
        const unavailable = overlap();
        let answer: Response;
        let text: string;
        try {
          answer = await decide(server, decision);
          text = await answer.text();
        } catch (error) {
          undecided.push(decision); // cut off: try again after the restart
          throw error;
        }
        if (answer.status === 200) decided.push({ ...decision, round });
        else if (answer.status === 409)
          undecided.push(decision); // its hold was closed meanwhile, or a cut-off try committed
        else if (unavailable(answer.status, text)) {
          undecided.push(decision); // not recorded, or recorded without an answer: tried again
          await sleep(20);
        } else unexpected('a decision', answer.status, text);
      });
    const load = Promise.all([submitter(), submitter(), retrier(), decider(), decider()]);
    const acknowledgements = () => acknowledged.length + decided.length;
    const killService = async () => {
      killed = true;
      stopped = true;
      server.child.kill('SIGKILL');
      assert.deepEqual(await server.exited, { code: null, signal: 'SIGKILL' });
    };
    const crashPostgres = async () => {
      down = true;
      outages++;
      await cluster!.crashStop();
    };

    await sleep(30 + rand() * 400);
    // The moment counts from the service's start, and on a busy machine its first answers can come
    // later than that: a round that ends before any load got through tests nothing. So when the run
    // still lacks an acknowledged hold, or a decision while there are links to decide, the round
    // ends only once it has one (then at once, which is as random a moment as any under load).
    const lacking = () => acknowledged.length === 0 || (decided.length === 0 && linksAtStart > 0);
    if (kind !== 'postgres' && lacking())
      await until(
        `round ${round}: the first acknowledgements of the run`,
        () => (lacking() && failures.length === 0 ? undefined : true),
        60_000,
      );
    if (kind === 'service') {
      await killService();
      await load;
    } else if (kind === 'postgres') {
      await crashPostgres();
      await sleep(rand() * 300); // how long it stays down, part of the seeded schedule
      await cluster!.restart();
      // The service comes back by itself: its pool connects again on the next query.
      await until(
        `round ${round}: the service ready again after PostgreSQL restarted`,
        async () => ((await fetch(`${server.url}/readyz`)).status === 200 ? true : undefined),
        30_000,
      );
      down = false;
      // ...and serves again: more load now, and wait until some of it is acknowledged.
      submitBudget = submissions + 15;
      retryBudget = retries + 6;
      const before = acknowledgements();
      await until(
        `round ${round}: an acknowledged answer after PostgreSQL restarted`,
        () => (acknowledgements() > before ? true : undefined),
        30_000,
      );
      await sleep(rand() * 200);
      stopped = true;
      await load;
      server.child.kill('SIGTERM');
      assert.equal((await server.exited).code, 0, `round ${round}: graceful stop\n${server.output()}`);
    } else {
      // Both, in a random order, a random moment apart.
      const [first, second] = rand() < 0.5 ? [crashPostgres, killService] : [killService, crashPostgres];
      await first();
      await sleep(rand() * 100);
      await second();
      await load;
      await cluster!.restart();
      down = false;
    }
    t.diagnostic(`round ${round} (${kind}): ${Date.now() - began} ms`);
  }
  t.diagnostic(
    `${acknowledged.length} holds acknowledged, ${cutOff.length} cut off; ${decided.length} decisions acknowledged; ` +
      `${unavailableAnswers} answers 503 unavailable during PostgreSQL outages, ` +
      `${committedUnanswered} of them for a submission that had committed`,
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
    for (const { workspace, body, answer, round } of acknowledged) {
      const rows = await db.all<{ id: string }>(
        'SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2',
        [workspaces[workspace]!.workspace.id, body.idempotency_key],
      );
      assert.deepEqual(
        rows.map((row) => row.id),
        [answer!.body.id],
        `the hold acknowledged in round ${round}, exactly once`,
      );
    }
    // Decisions: every acknowledged one is there with its verdict.
    for (const decision of decided) {
      const row = await db.one<{ verdict: string }>(
        `SELECT d.verdict FROM hold_decisions d JOIN members m ON m.id = d.member_id
         WHERE d.hold_id = $1 AND m.email = $2`,
        [decision.holdId, decision.member],
      );
      assert.equal(
        row?.verdict,
        decision.verdict,
        `decision of ${decision.member} on ${decision.holdId}, acknowledged in round ${decision.round}`,
      );
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
    const waited = Date.now();
    await until(
      'every webhook event delivered',
      async () => {
        const pending = await db.one<{ n: number }>(
          `SELECT COUNT(*) AS n FROM webhook_events WHERE ${inWorkspaces} AND state <> 'delivered'`,
          ids,
        );
        return Number(pending!.n) === 0 ? true : undefined;
      },
      60_000,
      250,
    );
    t.diagnostic(`webhook events all delivered after ${Date.now() - waited} ms`);
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
