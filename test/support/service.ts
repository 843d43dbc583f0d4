/** A real service on a free loopback port, on a given backend, with a clock tests can move forward. */
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config.ts';
import { type RunningService, startService } from '../../src/runtime.ts';
import { createApiKey } from '../../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../../src/services/apply-config.ts';
import { decideHold } from '../../src/services/decide-hold.ts';
import { createWorkspace } from '../../src/services/workspaces.ts';
import { findMemberByEmail } from '../../src/store/members.ts';
import type { Plan, Workspace } from '../../src/store/workspaces.ts';
import { type Backend, postgres, type Storage } from './backends.ts';
import { startTcpProxy } from './tcp-proxy.ts';
import { settles, until } from './wait.ts';

/**
 * The clock of the services in a test: real time plus an offset that tests move or, given `at`, a
 * clock that stands still at `at` until moved. Moving it runs the workers of every service on it
 * (deadline sweeps, webhook and notification retries, stale claims) at the new time at once, not
 * at their next interval: `await clock.advance(30_000)` resolves once a retry due 30 s later has been
 * attempted and recorded, without waiting 30 s or any interval.
 */
export class TestClock {
  offset = 0;
  private readonly still: number | null;
  private readonly moved = new Set<() => Promise<void>>();

  constructor(options: { at?: number } = {}) {
    this.still = options.at ?? null;
  }

  now = () => (this.still ?? Date.now()) + this.offset;

  /**
   * Moves the clock by `ms` (back, when negative); resolves once the workers ran at the new time.
   * With `runWorkers: false` they are left alone: time that passes between two of their rounds.
   */
  advance(ms: number, options: { runWorkers?: boolean } = {}): Promise<void> {
    this.offset += ms;
    return options.runWorkers === false ? Promise.resolve() : this.runWorkers();
  }

  /** Moves the clock to `at` (not back): the time a retry or deadline is due. */
  advanceTo(at: number): Promise<void> {
    return this.advance(Math.max(0, at - this.now()));
  }

  /** Every service on this clock runs its workers once, and they finish what they started. */
  async runWorkers(): Promise<void> {
    await Promise.all([...this.moved].map((run) => run()));
  }

  /** A service on this clock: `runWorkers` is called when the clock moves; returns how to stop that. */
  drive(runWorkers: () => Promise<void>): () => void {
    this.moved.add(runWorkers);
    return () => this.moved.delete(runWorkers);
  }
}

export interface TestService {
  service: RunningService;
  url: string;
  clock: TestClock;
  storage: Storage;
  /**
   * Every worker runs a round now and finishes what it started (sends, calls): what was due has
   * happened, and nothing started before is still on its way. The proof that something did not happen.
   */
  settled(): Promise<void>;
  /** A workspace with an admin (admin@acme.test) and a live key. */
  workspace(options?: { plan?: Plan; config?: string }): Promise<{ workspace: Workspace; key: string }>;
  /** Stops the server and keeps the storage (for restart tests). */
  stop(): Promise<void>;
  /** Stops the server and drops the storage. */
  close(): Promise<void>;
}

let counter = 0;

export async function startTestService(
  backend: Backend,
  options: { storage?: Storage; clock?: TestClock; env?: Record<string, string> } = {},
): Promise<TestService> {
  const storage = options.storage ?? (await backend.create());
  const clock = options.clock ?? new TestClock();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DEADLINE_SWEEP_MS: '50',
    PUBLIC_URL: '',
    DATABASE_URL: '',
    ...storage.env,
    ...options.env,
  });
  const service = await startService(config, { now: clock.now });
  const undrive = clock.drive(() => service.runWorkers());
  const { ctx } = service;
  return {
    service,
    url: service.url,
    clock,
    storage,
    settled: () => service.runWorkers(),
    async workspace({ plan, config: yaml } = {}) {
      counter += 1;
      const workspace = await createWorkspace(ctx, {
        slug: `ws-${counter}-${Date.now() % 100000}`,
        name: 'Acme',
        plan,
      });
      await applyConfig(
        ctx,
        workspace,
        parseConfig(yaml ?? 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n'),
      );
      const { key } = await createApiKey(ctx, { workspace, env: 'live' });
      return { workspace, key };
    },
    async stop() {
      undrive();
      await service.stop();
    },
    async close() {
      undrive();
      await service.stop();
      await storage.drop();
    },
  };
}

/** A service on PostgreSQL whose storage connection runs through a relay the test can cut and restore. */
export async function startTestServiceOnCuttablePostgres() {
  const storage = await postgres.create();
  const url = new URL(storage.env.DATABASE_URL!);
  const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  const t = await startTestService(postgres, {
    storage: { ...storage, env: { ...storage.env, DATABASE_URL: url.toString() } },
  });
  return {
    t,
    proxy,
    async close() {
      await t.close();
      await proxy.close();
    },
  };
}

/** A member's decision through the service layer (the app comes later; the rules are the same). */
export async function decideAs(
  t: TestService,
  workspaceId: string,
  holdId: string,
  verdict: 'approve' | 'reject',
  email = 'admin@acme.test',
  comment: string | null = null,
  channel: 'inbox' | 'email' | 'sms' | 'slack' | 'widget' = 'inbox',
) {
  const member = await findMemberByEmail(t.service.ctx.db, workspaceId, email);
  if (!member) throw new Error(`no member ${email}`);
  return decideHold(t.service.ctx, {
    workspaceId,
    holdId,
    memberId: member.id,
    verdict,
    comment,
    channel,
  });
}

/**
 * Nothing more is on its way to e-mail, SMS or Slack: every notification job of the service is done
 * (sent, skipped or given up; a message goes out before its job is marked), and the workers have had
 * a round since and finished what they started. What a test counts after this stays counted.
 */
export async function notificationsDone(t: TestService) {
  await until('every notification job to be done', async () =>
    (await t.service.ctx.db.one("SELECT id FROM notifications WHERE state = 'pending' LIMIT 1"))
      ? undefined
      : true,
  );
  await t.settled();
}

/**
 * Instances on one PostgreSQL: everything `from` has told the others so far (hold changes, the MCP
 * relay's messages) has reached `to`. A marker sent after it on the same channel, which delivers in
 * order, has arrived.
 */
export async function caughtUp(from: TestService, to: TestService, workspaceId: string) {
  const marker = `svc_pa_marker_${randomUUID()}`;
  let stop = () => {};
  const arrived = new Promise<void>((resolve) => {
    stop = to.service.ctx.holdEvents.watchAll((holdId) => holdId === marker && resolve());
  });
  try {
    from.service.ctx.holdEvents.publish(marker, workspaceId);
    await settles('the marker to reach the other instance', arrived);
  } finally {
    stop();
  }
}
