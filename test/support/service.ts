/** A real service on a free loopback port, on a given backend, with a clock tests can move forward. */
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

/** Real time plus an offset that tests advance: deadlines pass without waiting for them. */
export class TestClock {
  offset = 0;
  now = () => Date.now() + this.offset;
  advance(ms: number) {
    this.offset += ms;
  }
}

export interface TestService {
  service: RunningService;
  url: string;
  clock: TestClock;
  storage: Storage;
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
  const { ctx } = service;
  return {
    service,
    url: service.url,
    clock,
    storage,
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
    stop: () => service.stop(),
    async close() {
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
