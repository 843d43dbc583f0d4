/**
 * Long-polls, `POST /api/v1/holds/{id}/wait` (docs/holds.md), against the service as its own process
 * (`src/main.ts`, SQLite), each beside its floor measured in the same run:
 * - memory: 10,000 waits open at once on 10,000 pending holds, from a load process of their own; the
 *   service's RSS and JS heap growth per open wait, beside the same 10,000 requests held unanswered by a
 *   bare node:http server (a child process too), per connection. Both are read after gc().
 * - wake-up: 200 waits open; each hold approved in turn through the inbox (the real human path, a form
 *   POST with a session); from sending that POST to the waiter having its answer (p50, p99), beside the
 *   decider's own answer to the same POST, itself beside a GET /healthz round trip.
 *
 * Run as a script, this file is one of the helper processes: `load` (opens the waits) or `floor`
 * (the bare server).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { submitHold } from '../src/services/submit-hold.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { sqlite, type Storage } from '../test/support/backends.ts';
import { NODE, ROOT } from '../test/support/cli.ts';
import {
  killServerProcesses,
  type ServerProcess,
  startServerProcess,
} from '../test/support/server-process.ts';
import { compared, type Figure, percentile } from './lib.ts';

const WAITERS = 10_000;
/** Waits per workspace: under the `v1-wait` quota of 120 a minute per workspace, so none is refused. */
const PER_WORKSPACE = 100;
const DECISIONS = 200;
const WARMUP = 10;
/** Enough workspaces that the wake-up's waits stay under the quota too (70 each). */
const DECISION_WORKSPACES = 3;
/** The longest wait the contract allows, so every wait is still open when the memory is read. */
const WAIT_BODY = JSON.stringify({ timeout_seconds: 60 });
/** How long the 10,000 may take to be open, well inside their 60 s. */
const OPEN_WITHIN_MS = 40_000;
/** The load process opens this many connections at a time, so the listen backlog does not overflow. */
const OPEN_BATCH = 200;
const FILE = fileURLToPath(import.meta.url);
const ADMIN = 'admin@bench.test';
const CONFIG = {
  members: [{ email: ADMIN, name: 'Admin', role: 'admin' }],
  tools: [{ connection: 'SDK', tool: 'send_invoice', classification: 'approval' }],
};
/**
 * Loaded into the service with --expose-gc: SIGUSR2 runs a full GC, so its memory is read without
 * garbage in it. Nothing else changes (SIGUSR2 has no other use there).
 */
const GC_ON_SIGUSR2 = `--expose-gc --import=data:text/javascript,${encodeURIComponent(
  'process.on("SIGUSR2",()=>{globalThis.gc();globalThis.gc()})',
)}`;

interface Wait {
  holdId: string;
  key: string;
}

/** What the load process tells: all requests written, and each answer (none is expected until shutdown). */
type LoadMessage =
  | { type: 'sent' }
  | { type: 'answer'; index: number; status: number; body: string }
  | { type: 'failed'; index: number; error: string };
type FloorMessage =
  | { type: 'listening'; port: number }
  | { type: 'count'; received: number }
  | { type: 'memory'; heapUsed: number };

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** `performance.now()` when the whole answer was read. */
  at: number;
}

/** One request; never rejects (a failure is status 0 with the error as text), so none goes unhandled. */
function send(
  agent: Agent | false,
  url: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; body?: string } = {},
): Promise<Answer> {
  const { method = 'GET', headers = {}, body } = options;
  return new Promise((resolve) => {
    const length = body === undefined ? {} : { 'content-length': Buffer.byteLength(body) };
    const req = request(url, { agent, method, headers: { ...headers, ...length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString('utf8'),
          at: performance.now(),
        }),
      );
    });
    req.on('error', (error) =>
      resolve({ status: 0, headers: {}, text: error.message, at: performance.now() }),
    );
    req.end(body);
  });
}

const waitRequest = (wait: Wait) => ({
  method: 'POST',
  headers: { authorization: `Bearer ${wait.key}`, 'content-type': 'application/json' },
  body: WAIT_BODY,
});

/** An answer to a wait must be the hold's record, in `status`; anything else ends the benchmark. */
function checkRecord(what: string, wait: Wait, status: number, text: string, expected: string) {
  let record: { id?: unknown; status?: unknown; decision?: { verdict?: unknown } | null } = {};
  try {
    record = JSON.parse(text) as typeof record;
  } catch {
    // checked below
  }
  const verdictOk = expected !== 'approved' || record.decision?.verdict === 'approve';
  if (status !== 200 || record.id !== wait.holdId || record.status !== expected || !verdictOk)
    throw new Error(`bench: ${what} of ${wait.holdId} answered ${status} ${text.slice(0, 300)}`);
}

/** VmRSS of `pid`, in KiB. */
function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
}

/** The soft limit on open files this process (and so its children) has. */
function openFileLimit(): number {
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
  return soft === undefined || soft === 'unlimited' ? Infinity : Number(soft);
}

async function metrics(origin: string) {
  const answer = await send(false, `${origin}/metrics`);
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(answer.text)?.[1]);
  return { waiters: value('approvals_waiters'), heapUsed: value('nodejs_heap_size_used_bytes') };
}

// ---------------------------------------------------------------------------------------------------
// Helper processes

const helpers = new Set<ChildProcess>();

function startHelper(role: 'load' | 'floor'): ChildProcess {
  const child = spawn(NODE, ['--expose-gc', FILE, role], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  helpers.add(child);
  child.once('exit', () => helpers.delete(child));
  return child;
}

async function stopHelper(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** The next message of `type` from `child`. */
function next<M extends { type: string }, T extends M['type']>(
  child: ChildProcess,
  type: T,
): Promise<Extract<M, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: M) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as Extract<M, { type: T }>);
    };
    const onExit = () => reject(new Error(`bench: a helper process exited before it sent ${type}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Opens `waits` against `origin` and collects every answer as it comes. */
function startLoad(origin: string, waits: Wait[]) {
  const child = startHelper('load');
  const answers: Extract<LoadMessage, { type: 'answer' | 'failed' }>[] = [];
  child.on('message', (message: LoadMessage) => {
    if (message.type !== 'sent') answers.push(message);
  });
  const sent = next<LoadMessage, 'sent'>(child, 'sent');
  // Awaited only when all goes well; a helper killed after a failure must not add an unhandled rejection.
  sent.catch(() => {});
  child.send({ origin, waits });
  return { child, answers, sent };
}

/** Polls until `count()` reaches `n`; throws past `until` or as soon as `problem()` says something. */
async function reach(
  what: string,
  n: number,
  until: number,
  count: () => Promise<number>,
  problem: () => string,
) {
  for (;;) {
    const wrong = problem();
    if (wrong) throw new Error(`bench: ${wrong}`);
    const now = await count();
    if (now >= n) return;
    if (Date.now() > until) throw new Error(`bench: only ${now} of ${n} ${what} in time`);
    await sleep(100);
  }
}

const early = (answers: { index: number }[]) =>
  answers.length === 0 ? '' : `${answers.length} waits answered early, first: ${JSON.stringify(answers[0])}`;

// ---------------------------------------------------------------------------------------------------
// The storage: workspaces, keys and pending holds, written before the service starts

interface Seeded {
  /** One pending hold per wait, PER_WORKSPACE to a workspace. */
  memory: Wait[];
  decisions: Wait[];
  /** Sign-in paths of the admin of each decision workspace, by key. */
  invites: Map<string, string>;
  seconds: number;
}

async function seed(storage: Storage, waiters: number): Promise<Seeded> {
  const settings = { ...storage.env, DATABASE_URL: storage.env.DATABASE_URL ?? '', PUBLIC_URL: '' };
  const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
  const start = performance.now();
  let made = 0;
  try {
    const workspace = async (holds: number) => {
      const created = await createWorkspace(ctx, { slug: `longpoll-${made}`, name: 'Long-poll bench' });
      await applyConfig(ctx, created, parseConfig(JSON.stringify(CONFIG)));
      const { key } = await createApiKey(ctx, { workspace: created, env: 'live' });
      const waits: Wait[] = [];
      for (let i = 0; i < holds; i++) {
        const { body } = await submitHold(
          ctx,
          {
            workspace: created,
            environment: 'live',
            requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
          },
          {
            connection: 'SDK',
            toolName: 'send_invoice',
            arguments: { amount: 100 + i, currency: 'EUR' },
            agent: { id: 'bench-agent', label: null },
            context: {},
            idempotencyKey: `longpoll-${made}-${i}`,
          },
        );
        if (body.status !== 'pending') throw new Error(`bench: a submission was ${body.status}`);
        waits.push({ holdId: body.id, key });
      }
      made += 1;
      return { workspace: created, key, waits };
    };
    const memory: Wait[] = [];
    for (let i = 0; i < waiters / PER_WORKSPACE; i++) memory.push(...(await workspace(PER_WORKSPACE)).waits);
    const decisions: Wait[] = [];
    const invites = new Map<string, string>();
    for (let i = 0; i < DECISION_WORKSPACES; i++) {
      const seeded = await workspace((DECISIONS + WARMUP) / DECISION_WORKSPACES);
      decisions.push(...seeded.waits);
      invites.set(seeded.key, new URL((await inviteLink(ctx, seeded.workspace, ADMIN)).url).pathname);
    }
    return { memory, decisions, invites, seconds: (performance.now() - start) / 1000 };
  } finally {
    await ctx.db.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Wake-up: a decision in the inbox to the waiter's answer

/** Signs the admin in through the invite link and reads the session's CSRF token from the inbox. */
async function signIn(agent: Agent, origin: string, invite: string) {
  const login = await send(agent, origin + invite, { method: 'POST' });
  const cookie = /approvals_session=([^;]+)/.exec(String(login.headers['set-cookie']))?.[1];
  if (login.status !== 303 || !cookie) throw new Error(`bench: sign-in answered ${login.status}`);
  const inbox = await send(agent, `${origin}/app/inbox`, {
    headers: { cookie: `approvals_session=${cookie}` },
  });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(inbox.text)?.[1];
  if (!csrf) throw new Error(`bench: no CSRF token in the inbox (${inbox.status})`);
  return { cookie, csrf };
}

async function measureWakeUp(origin: string, seeded: Seeded) {
  // The decider is one browser: one keep-alive connection. Each waiter has a connection of its own.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const waitAgent = new Agent({ keepAlive: true, maxSockets: Infinity });
  try {
    const sessions = new Map<string, { cookie: string; csrf: string }>();
    for (const [key, invite] of seeded.invites) sessions.set(key, await signIn(agent, origin, invite));

    const waits = seeded.decisions;
    const decided = new Set<number>();
    const tooSoon: { index: number; status: number }[] = [];
    const answers = waits.map((wait, index) =>
      send(waitAgent, `${origin}/api/v1/holds/${wait.holdId}/wait`, waitRequest(wait)).then((answer) => {
        if (!decided.has(index)) tooSoon.push({ index, status: answer.status });
        return answer;
      }),
    );
    // Decide only once every wait is held by the server, so each answer is a wake-up, not a first read.
    const until = Date.now() + OPEN_WITHIN_MS;
    await reach(
      'waits open',
      waits.length,
      until,
      async () => (await metrics(origin)).waiters,
      () => early(tooSoon),
    );

    // The floor's round trips while the same waits are open, before the decisions wake the workers.
    const healthz: number[] = [];
    for (let i = 0; i < DECISIONS + WARMUP; i++) {
      const start = performance.now();
      const answer = await send(agent, `${origin}/healthz`);
      if (answer.status !== 200) throw new Error(`bench: /healthz answered ${answer.status}`);
      if (i >= WARMUP) healthz.push(answer.at - start);
    }
    const toWaiter: number[] = [];
    const toDecider: number[] = [];
    for (const [index, wait] of waits.entries()) {
      const session = sessions.get(wait.key)!;
      decided.add(index);
      const form = new URLSearchParams({ _csrf: session.csrf, verdict: 'approve' }).toString();
      const start = performance.now();
      const decision = await send(agent, `${origin}/app/holds/${wait.holdId}/decide`, {
        method: 'POST',
        headers: {
          cookie: `approvals_session=${session.cookie}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: form,
      });
      const answer = await answers[index]!;
      // Approved: back to the inbox, the notice in the flash cookie (src/app/flash.ts).
      const notice = /approvals_flash=([^;]*)/.exec(String(decision.headers['set-cookie']))?.[1];
      if (decision.status !== 303 || decision.headers.location !== '/app/inbox' || notice !== 'approved')
        throw new Error(
          `bench: deciding ${wait.holdId} answered ${decision.status} to ${decision.headers.location} (notice ${notice}) ${decision.text.slice(0, 300)}`,
        );
      checkRecord('the wait', wait, answer.status, answer.text, 'approved');
      if (index >= WARMUP) {
        toWaiter.push(answer.at - start);
        toDecider.push(decision.at - start);
      }
    }
    if (tooSoon.length > 0) throw new Error(`bench: ${early(tooSoon)}`);

    return { toWaiter, toDecider, healthz };
  } finally {
    agent.destroy();
    waitAgent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------
// Memory: many open waits, and the same requests held by a bare server

/**
 * The service's memory after a full GC: RSS from /proc, the JS heap from its own /metrics. Reading the
 * 10,000 holds also fills SQLite's page cache, at most its default 2 MiB (0.2 KiB a wait) of the growth.
 */
async function serviceMemory(server: ServerProcess) {
  server.child.kill('SIGUSR2');
  await sleep(1000); // the GC runs on the service's event loop, and the pages it frees go back after
  return { rss: rssKiB(server.child.pid!), heap: (await metrics(server.url)).heapUsed / 1024 };
}

async function measureService(server: ServerProcess, waits: Wait[]) {
  const before = await serviceMemory(server);
  const load = startLoad(server.url, waits);
  try {
    const start = performance.now();
    await reach(
      'waits open',
      waits.length,
      Date.now() + OPEN_WITHIN_MS,
      async () => (await metrics(server.url)).waiters,
      () => early(load.answers),
    );
    const openSeconds = (performance.now() - start) / 1000;
    await load.sent;
    const after = await serviceMemory(server);
    if (load.answers.length > 0) throw new Error(`bench: ${early(load.answers)}`);

    // At shutdown every wait answers at once with its current record (docs/holds.md): still pending.
    server.child.kill('SIGTERM');
    await reach(
      'waits answered at shutdown',
      waits.length,
      Date.now() + 30_000,
      async () => load.answers.length,
      () => '',
    );
    for (const answer of load.answers) {
      const wait = waits[answer.index]!;
      if (answer.type === 'failed')
        throw new Error(`bench: the wait of ${wait.holdId} failed: ${answer.error}`);
      checkRecord('the wait at shutdown', wait, answer.status, answer.body, 'pending');
    }
    const exit = await server.exited;
    if (exit.code !== 0) throw new Error(`bench: the service exited with ${exit.code ?? exit.signal}`);
    return { before, after, openSeconds };
  } finally {
    await stopHelper(load.child);
  }
}

async function measureFloor(waits: Wait[]) {
  const floor = startHelper('floor');
  try {
    const { port } = await next<FloorMessage, 'listening'>(floor, 'listening');
    const memory = async () => {
      floor.send('gc');
      const { heapUsed } = await next<FloorMessage, 'memory'>(floor, 'memory');
      await sleep(1000); // as for the service
      return { rss: rssKiB(floor.pid!), heap: heapUsed / 1024 };
    };
    const before = await memory();
    const load = startLoad(`http://127.0.0.1:${port}`, waits);
    try {
      const received = async () => {
        floor.send('count');
        return (await next<FloorMessage, 'count'>(floor, 'count')).received;
      };
      await reach('requests held', waits.length, Date.now() + OPEN_WITHIN_MS, received, () =>
        early(load.answers),
      );
      await load.sent;
      return { before, after: await memory() };
    } finally {
      await stopHelper(load.child);
    }
  } finally {
    await stopHelper(floor);
  }
}

// ---------------------------------------------------------------------------------------------------

export async function run(): Promise<{ figures: Figure[]; skipped: { figure: string; reason: string }[] }> {
  // Each open wait is a socket in the service and one in the load process; both inherit this limit.
  const files = openFileLimit();
  const waiters = Math.min(WAITERS, Math.floor((files - 500) / PER_WORKSPACE) * PER_WORKSPACE);
  if (waiters < 1000) {
    const reason = `the open-file limit (${files}) is too low`;
    return { figures: [], skipped: [{ figure: 'every long-poll figure', reason }] };
  }
  const storage = await sqlite.create();
  try {
    const seeded = await seed(storage, waiters);
    const server = await startServerProcess(storage, {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${GC_ON_SIGUSR2}`.trim(),
    });
    const wakeUp = await measureWakeUp(server.url, seeded);
    const service = await measureService(server, seeded.memory);
    const floor = await measureFloor(seeded.memory);

    const per = (m: { before: { rss: number; heap: number }; after: { rss: number; heap: number } }) => ({
      rss: (m.after.rss - m.before.rss) / waiters,
      heap: (m.after.heap - m.before.heap) / waiters,
    });
    const ours = per(service);
    const bare = per(floor);
    const limited = waiters < WAITERS ? ` (not ${WAITERS}: the open-file limit is ${files})` : '';
    const floorRss: Figure = {
      bench: 'longpoll',
      figure: 'RSS per held request, bare node:http',
      value: bare.rss,
      unit: 'KiB',
      note: `the same ${waiters} requests (same bytes, same load process) held unanswered by a node:http server in a child process; growth of VmRSS, read after gc()`,
    };
    const floorHeap: Figure = {
      bench: 'longpoll',
      figure: 'JS heap per held request, bare node:http',
      value: bare.heap,
      unit: 'KiB',
    };
    const rss: Figure = {
      bench: 'longpoll',
      figure: 'RSS per open /wait',
      value: ours.rss,
      unit: 'KiB',
      note: `${waiters} waits${limited} (timeout_seconds 60) on as many pending holds, ${PER_WORKSPACE} per workspace, SQLite, from a load process of their own; the service's VmRSS growth after gc() (started with --expose-gc and a SIGUSR2 hook that runs it), from ${(service.before.rss / 1024).toFixed(0)} MiB (JS heap ${(service.before.heap / 1024).toFixed(0)} MiB); all open in ${service.openSeconds.toFixed(1)} s; every wait answered pending at shutdown; issue 43's goal, at most 1.2 times the bare server's: ${ours.rss <= 1.2 * bare.rss ? 'met' : 'NOT MET'}`,
    };
    const heap: Figure = {
      bench: 'longpoll',
      figure: 'JS heap per open /wait',
      value: ours.heap,
      unit: 'KiB',
      note: 'nodejs_heap_size_used_bytes from the service’s /metrics, after gc()',
    };
    const ms = (figure: string, values: number[], p: number, note?: string): Figure => ({
      bench: 'longpoll',
      figure: `${figure}, p${p}`,
      value: percentile(values, p),
      unit: 'ms',
      ...(note && { note }),
    });
    const healthz = (p: number) => ms('GET /healthz round trip', wakeUp.healthz, p);
    const decider = (p: number) =>
      ms(
        'approve in the inbox, decider’s answer',
        wakeUp.toDecider,
        p,
        p === 50
          ? 'POST /app/holds/{id}/decide (a session, one keep-alive connection) to its 303'
          : undefined,
      );
    // The waiter's floor is the decider's own answer: both start with the same POST and need the same
    // commit, so the ratio is what telling a waiter costs on top of deciding (a /healthz round trip
    // leaves the decision's own work, a SQLite transaction with its evidence, in the figure).
    const waiter = (p: number) =>
      ms(
        'approve in the inbox to the waiter’s answer',
        wakeUp.toWaiter,
        p,
        p === 50
          ? `${DECISIONS} holds approved one at a time while their ${DECISIONS + WARMUP} waits are open (the first ${WARMUP} warm up); from sending the POST to the wait's whole answer (approved)`
          : undefined,
      );
    return {
      figures: [
        floorRss,
        compared(rss, floorRss),
        floorHeap,
        compared(heap, floorHeap),
        healthz(50),
        healthz(99),
        compared(decider(50), healthz(50)),
        compared(decider(99), healthz(99)),
        compared(waiter(50), decider(50)),
        compared(waiter(99), decider(99)),
      ],
      skipped: [],
    };
  } finally {
    await Promise.all([...helpers].map(stopHelper));
    await killServerProcesses();
    await storage.drop();
  }
}

// ---------------------------------------------------------------------------------------------------
// The helper processes: this file run with a role

/** Opens every wait it is sent, OPEN_BATCH connections at a time, and reports each answer. */
function loadProcess() {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const tell = (message: LoadMessage) => process.send!(message);
  process.once('message', async ({ origin, waits }: { origin: string; waits: Wait[] }) => {
    const open = (wait: Wait, index: number) =>
      new Promise<void>((written) => {
        const { method, headers, body } = waitRequest(wait);
        const req = request(
          `${origin}/api/v1/holds/${wait.holdId}/wait`,
          { agent, method, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () =>
              tell({
                type: 'answer',
                index,
                status: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString(),
              }),
            );
          },
        );
        req.on('error', (error) => {
          tell({ type: 'failed', index, error: error.message });
          written();
        });
        req.end(body, () => written());
      });
    for (let first = 0; first < waits.length; first += OPEN_BATCH) {
      await Promise.all(waits.slice(first, first + OPEN_BATCH).map((wait, k) => open(wait, first + k)));
    }
    tell({ type: 'sent' });
  });
}

/** A server that reads each request and never answers; says how many it holds, and collects garbage. */
function floorProcess() {
  const held: unknown[] = []; // as a handler that answers later keeps its reply
  const server = createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  const tell = (message: FloorMessage) => process.send!(message);
  process.on('message', (message: 'gc' | 'count') => {
    if (message === 'count') return tell({ type: 'count', received: held.length });
    globalThis.gc!();
    globalThis.gc!();
    tell({ type: 'memory', heapUsed: process.memoryUsage().heapUsed });
  });
  server.listen(0, '127.0.0.1', () =>
    tell({ type: 'listening', port: (server.address() as AddressInfo).port }),
  );
}

if (import.meta.main) {
  // A helper lives only as long as the benchmark that started it.
  process.once('disconnect', () => process.exit(0));
  if (process.argv[2] === 'load') loadProcess();
  else if (process.argv[2] === 'floor') floorProcess();
  else
    console.error('usage: bench/longpoll.ts load|floor (helpers of the benchmark; run it with bench/run.ts)');
}
