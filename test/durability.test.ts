/**
 * Durability: an acknowledged hold survives kill -9, deadlines survive restarts, SIGTERM answers
 * waiters and exits cleanly, and a service without storage does not start.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { startService } from '../src/runtime.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { openDb } from '../src/store/open.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { type Backend, backends, postgres, type Storage } from './support/backends.ts';
import { type Answer, call, submission } from './support/http.ts';
import { freePort } from './support/mcp-upstream.ts';
import {
  killServerProcesses,
  type ServerProcess,
  startServerProcess,
  storageSettings,
} from './support/server-process.ts';
import { decideAs, startTestService, TestClock, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

/** Fixed, so that a replayed creation response is byte-for-byte the first one across restarts. */
const PUBLIC_URL = 'http://approvals.test';
const STATUS_AFTER: Record<string, string> = {
  allowed: 'auto_allowed',
  pending: 'pending',
  denied: 'rejected',
};

/** Rejects after `ms` unless `promise` settles first. */
async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

after(killServerProcesses);

type Server = ServerProcess;

const startServer = (storage: Storage) =>
  startServerProcess(storage, { PUBLIC_URL, DEADLINE_SWEEP_MS: '100' });

async function stopServer(server: Server, signal: NodeJS.Signals = 'SIGTERM') {
  server.child.kill(signal);
  return within(15_000, server.exited, 'server exit');
}

const WORKSPACE_CONFIG = `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
tools:
  - { connection: SDK, tool: ship_it, classification: allow }
  - { connection: SDK, tool: wire_money, classification: deny }
`;

/** A workspace and a live key, made directly on the storage (no server running). */
async function prepareWorkspace(storage: Storage): Promise<{ workspace: Workspace; key: string }> {
  const ctx = await openContext(loadConfig({ ...storageSettings(storage), PORT: '0', LOG_LEVEL: 'silent' }));
  try {
    const workspace = await createWorkspace(ctx, {
      slug: `dur-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
      name: 'Acme',
    });
    await applyConfig(ctx, workspace, parseConfig(WORKSPACE_CONFIG));
    const { key } = await createApiKey(ctx, { workspace, env: 'live' });
    return { workspace, key };
  } finally {
    await ctx.db.close();
  }
}

async function verify(url: string, key: string) {
  const answer = await call(url, 'GET', '/api/v1/audit/verify', { key });
  assert.equal(answer.status, 200);
  assert.equal(answer.body.valid, true, JSON.stringify(answer.body));
  assert.equal(answer.body.first_invalid, null);
  return answer.body.checked as number;
}

interface Submitted {
  /** The API key of the round's workspace. */
  key: string;
  body: ReturnType<typeof submission>;
  answer?: Answer;
  error?: unknown;
}

/** POST …/wait through node:http, so that the test decides whether the connection is kept alive. */
function rawWait(url: string, path: string, key: string, agent: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify({ timeout_seconds: 60 });
    const request = httpRequest(
      url + path,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('error', reject);
        response.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          const headers = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          resolve({ status: response.statusCode ?? 0, headers, body, text });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** A pending hold, a client long-polling it, SIGTERM: the waiter answers, the process exits, data stays. */
async function shutdownWithWaiter(
  backend: Backend,
  { keepAlive, exitWithinMs }: { keepAlive: boolean; exitWithinMs: number },
) {
  const storage = await backend.create();
  const agent = new Agent({ keepAlive });
  let server: Server | undefined;
  try {
    const { key } = await prepareWorkspace(storage);
    server = await startServer(storage);
    const submitted = await call(server.url, 'POST', '/api/v1/holds', {
      key,
      body: submission({ tool_name: 'needs_a_human' }),
    });
    assert.equal(submitted.body.status, 'pending');
    const id = submitted.body.id as string;
    const checked = await verify(server.url, key);

    const { url } = server;
    const waiting = rawWait(url, `/api/v1/holds/${id}/wait`, key, agent);
    waiting.catch(() => {}); // awaited below; an early failure must not go unhandled
    await until('the long-poll to be open on the server', async () =>
      /^approvals_waiters 1$/m.test((await call(url, 'GET', '/metrics')).text) ? true : undefined,
    );

    const signalled = Date.now();
    server.child.kill('SIGTERM');
    const answer = await within(10_000, waiting, 'waiter after SIGTERM');
    const answeredAfter = Date.now() - signalled;
    assert.equal(answer.status, 200);
    assert.equal(answer.body.id, id);
    assert.equal(answer.body.status, 'pending');
    assert.equal(answer.body.decision, null);
    assert.ok(answeredAfter < 5000, `answered ${answeredAfter} ms after SIGTERM`);
    const exit = await within(exitWithinMs, server.exited, 'exit after SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null });

    server = await startServer(storage);
    const record = await call(server.url, 'GET', `/api/v1/holds/${id}`, { key });
    assert.equal(record.status, 200);
    assert.equal(record.body.status, 'pending');
    assert.equal(record.body.expires_at, answer.body.expires_at);
    assert.equal(await verify(server.url, key), checked, 'nothing lost, nothing added');
    assert.equal((await stopServer(server)).code, 0);
  } finally {
    agent.destroy();
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    await storage.drop();
  }
}

for (const backend of backends) {
  describe(`durability (${backend.name})`, { skip: backend.skip, timeout: 180_000 }, () => {
    test('every hold acknowledged with 201 survives kill -9, exactly once', async (t) => {
      const storage = await backend.create();
      try {
        // A workspace per round, so the checks and retries stay within each one's 120-a-minute quota
        // (counted in the database on PostgreSQL, so it carries over the restarts).
        const workspaces: { workspace: Workspace; key: string }[] = [];
        const acknowledged: Submitted[] = [];
        const unacknowledged: Submitted[] = [];
        const tools = ['ship_it', 'wire_money', 'brand_new_tool'];

        const checkAcknowledged = async (url: string) => {
          for (const { key, answer } of acknowledged) {
            const record = await call(url, 'GET', `/api/v1/holds/${answer!.body.id}`, { key });
            assert.equal(record.status, 200, `acknowledged hold ${answer!.body.id} is missing`);
            assert.equal(record.body.status, STATUS_AFTER[answer!.body.status]);
          }
          for (const { key } of workspaces) await verify(url, key);
        };

        for (let round = 1; round <= 5; round += 1) {
          const round = await prepareWorkspace(storage);
          workspaces.push(round);
          const { key } = round;
          const server = await startServer(storage);
          await checkAcknowledged(server.url);
          // Some acknowledged one by one, then a concurrent wave, killed at its first 201.
          for (const tool of tools) {
            const body = submission({ tool_name: tool });
            const answer = await call(server.url, 'POST', '/api/v1/holds', { key, body });
            assert.equal(answer.status, 201, answer.text);
            acknowledged.push({ key, body, answer });
          }
          let killed = false;
          const wave = Array.from({ length: 12 }, (_, index) =>
            submission({ tool_name: tools[index % tools.length] }),
          );
          const results = await within(
            30_000,
            Promise.all(
              wave.map(async (body): Promise<Submitted> => {
                try {
                  const answer = await call(server.url, 'POST', '/api/v1/holds', { key, body });
                  if (answer.status === 201 && !killed) {
                    killed = true;
                    server.child.kill('SIGKILL');
                  }
                  return { key, body, answer };
                } catch (error) {
                  return { key, body, error };
                }
              }),
            ),
            'submissions',
          );
          assert.ok(killed, 'at least one submission was acknowledged before the kill');
          assert.deepEqual(await within(15_000, server.exited, 'kill'), { code: null, signal: 'SIGKILL' });
          for (const result of results) {
            if (result.answer?.status === 201) acknowledged.push(result);
            else if (result.answer)
              assert.fail(`unexpected answer ${result.answer.status}: ${result.answer.text}`);
            else unacknowledged.push(result);
          }
        }

        t.diagnostic(`${acknowledged.length} acknowledged, ${unacknowledged.length} cut off by the kills`);
        const server = await startServer(storage);
        try {
          await checkAcknowledged(server.url);
          for (const { key, body, answer } of acknowledged) {
            const retry = await call(server.url, 'POST', '/api/v1/holds', { key, body });
            assert.equal(retry.status, 200, `retry of an acknowledged key: ${retry.text}`);
            assert.equal(retry.headers.get('idempotent-replayed'), 'true');
            assert.deepEqual(retry.body, answer!.body);
          }
          // A submission cut off by the kill either committed (200 now) or did not (201 now).
          for (const { key, body } of unacknowledged) {
            const retry = await call(server.url, 'POST', '/api/v1/holds', { key, body });
            assert.ok([200, 201].includes(retry.status), `retry of a cut-off submission: ${retry.text}`);
          }
          for (const { key } of workspaces) await verify(server.url, key);
        } finally {
          assert.equal((await stopServer(server)).code, 0);
        }

        // Exactly once: one hold per key, one `hold.submitted` entry per hold.
        const db = await openDb({ databaseUrl: storage.env.DATABASE_URL, dataDir: storage.env.DATA_DIR });
        try {
          const ids = workspaces.map(({ workspace }) => workspace.id);
          const inRounds = `workspace_id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`;
          for (const { body, answer } of acknowledged) {
            const rows = await db.all<{ id: string }>(
              `SELECT id FROM holds WHERE ${inRounds} AND idempotency_key = $${ids.length + 1}`,
              [...ids, body.idempotency_key],
            );
            assert.deepEqual(
              rows.map((row) => row.id),
              [answer!.body.id],
            );
          }
          const holds = await db.one<{ n: number }>(`SELECT COUNT(*) AS n FROM holds WHERE ${inRounds}`, ids);
          const entries = await db.one<{ n: number }>(
            `SELECT COUNT(*) AS n FROM evidence WHERE ${inRounds} AND type = 'hold.submitted'`,
            ids,
          );
          assert.equal(Number(entries!.n), Number(holds!.n));
          assert.equal(Number(holds!.n), acknowledged.length + unacknowledged.length);
        } finally {
          await db.close();
        }
      } finally {
        await killServerProcesses(); // a failed round leaves its server running
        await storage.drop();
      }
    });

    test('deadlines survive a restart; expiry is never an approval', async () => {
      const storage = await backend.create();
      const clock = new TestClock();
      let first: TestService | undefined;
      let second: TestService | undefined;
      try {
        first = await startTestService(backend, { storage, clock });
        const { workspace, key } = await first.workspace();
        const submitted = await call(first.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: 'never_seen_before' }),
        });
        assert.equal(submitted.status, 201);
        assert.equal(submitted.body.status, 'pending');
        const id = submitted.body.id as string;
        const record = await call(first.url, 'GET', `/api/v1/holds/${id}`, { key });
        const expiresAt = Date.parse(record.body.expires_at);
        assert.ok(Math.abs(expiresAt - Date.parse(record.body.created_at) - 240 * 60_000) < 1000);
        const checked = await verify(first.url, key);
        await first.stop();

        await clock.advance(241 * 60_000);
        second = await startTestService(backend, { storage, clock });
        // The deadline worker expires it on its own (its first round runs at start), with nobody
        // reading the hold.
        await until('the hold to be expired by the worker after the restart', async () => {
          const row = await second!.service.ctx.db.one<{ status: string }>(
            'SELECT status FROM holds WHERE id = $1',
            [id],
          );
          return row?.status === 'expired' ? true : undefined;
        });
        const expired = await call(second.url, 'GET', `/api/v1/holds/${id}`, { key });
        assert.equal(expired.status, 200);
        assert.equal(expired.body.status, 'expired');
        assert.equal(expired.body.decision, null);
        assert.equal(await verify(second.url, key), checked + 1, 'one evidence entry for the expiry');

        const late = await decideAs(second, workspace.id, id, 'approve');
        assert.equal(late.outcome, 'closed');
        assert.equal(late.hold.status, 'expired');
        const afterLate = await call(second.url, 'GET', `/api/v1/holds/${id}`, { key });
        assert.equal(afterLate.body.status, 'expired');
        assert.equal(afterLate.body.decision, null);

        // An approval that arrives after the deadline, before any sweep, does not approve either.
        const another = await call(second.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: 'never_seen_before' }),
        });
        assert.equal(another.body.status, 'pending');
        // (The worker sweeps every 50 ms on its own; moving the clock does not add a sweep of its own.)
        await clock.advance(241 * 60_000, { runWorkers: false });
        const tooLate = await decideAs(second, workspace.id, another.body.id, 'approve');
        assert.equal(tooLate.outcome, 'closed');
        assert.equal(tooLate.hold.status, 'expired');
        const anotherRecord = await call(second.url, 'GET', `/api/v1/holds/${another.body.id}`, { key });
        assert.equal(anotherRecord.body.status, 'expired');
        assert.equal(anotherRecord.body.decision, null);
        await verify(second.url, key);
      } finally {
        await first?.stop();
        await second?.stop();
        await storage.drop();
      }
    });

    test('SIGTERM answers an open waiter with the current record and exits 0; data intact', () =>
      shutdownWithWaiter(backend, { keepAlive: false, exitWithinMs: 10_000 }));

    test('SIGTERM exits promptly also when the answered waiter keeps its connection alive', () =>
      shutdownWithWaiter(backend, { keepAlive: true, exitWithinMs: 5000 }));

    test('a running service is ready', async () => {
      const t = await startTestService(backend);
      try {
        const ready = await call(t.url, 'GET', '/readyz');
        assert.equal(ready.status, 200);
        assert.equal(ready.body.status, 'ok');
      } finally {
        await t.close();
      }
    });
  });
}

describe('storage down (postgres)', { skip: postgres.skip }, () => {
  test('a service whose database cannot be reached does not start', async () => {
    const port = await freePort(); // nothing listens there
    const dir = mkdtempSync(join(tmpdir(), 'approvals-test-'));
    try {
      const config = loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        PUBLIC_URL: '',
        DATA_DIR: dir,
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test`,
      });
      await within(
        15_000,
        assert.rejects(startService(config), (error: Error) => {
          assert.equal(error.name, 'StorageUnavailableError', String(error));
          return true;
        }),
        'startService',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('settings for several instances (postgres)', { skip: postgres.skip }, () => {
  test('without SECRETS_KEY on PostgreSQL the service says that instances must share one key', async () => {
    const storage = await postgres.create();
    try {
      const without = await startServerProcess(storage, { LOG_LEVEL: 'warn' });
      const withKey = await startServerProcess(storage, {
        LOG_LEVEL: 'warn',
        SECRETS_KEY: randomBytes(32).toString('base64'),
      });
      for (const server of [without, withKey]) {
        server.child.kill('SIGTERM');
        await within(15_000, server.exited, 'exit');
      }
      assert.match(without.output(), /SECRETS_KEY is not set/);
      assert.doesNotMatch(withKey.output(), /SECRETS_KEY is not set/);
    } finally {
      await storage.drop();
    }
  });
});
