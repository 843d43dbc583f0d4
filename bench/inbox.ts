/**
 * The inbox as an approver sees it (issue 20), against the service as its own process (`src/main.ts`),
 * on SQLite and (with TEST_DATABASE_URL) PostgreSQL, through the HTTP surface only (`/app/inbox`,
 * `/app/holds/<id>`, `/healthz`), so it measures whatever the inbox renders:
 * - the floors: `GET /healthz` alone, one request at a time on one keep-alive connection, and as a load
 *   balancer probes it (each on a new connection); the inbox of a member with nothing waiting (the
 *   page's fixed cost, and the floor of the HTML sizes);
 * - 1,000 pending holds with small payment arguments, and 240 pending holds of 1 MB arguments each,
 *   each waiting for one approver: `GET /app/inbox` one at a time (round trip measured by this process
 *   over loopback, and the service's own time for the same request, from its /metrics histogram), the
 *   bytes of HTML and how many of the seeded holds it names; then `GET /healthz` probes while a load
 *   process of its own sends inbox requests back to back;
 * - `GET /app/holds/<id>` of one 1 MB hold: time and bytes;
 * - triage (bench/triage.ts): keyboard decisions of 10 holds, bulk approval of 100 holds, and the
 *   e-mails of an escalation wave of 100 holds to one member.
 * Beside the 1 MB figures, the issue's goals as judgments (they never fail the run). Every answer is
 * checked: a status other than 200, an empty or non-HTML body, a page that names none of the seeded
 * holds or a time that is negative or not a number make that figure a failure (listed as skipped with
 * the reason, exit code 1), never a fast answer.
 *
 * Run as a script, this file is the load process: `node bench/inbox.ts load`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, type IncomingHttpHeaders, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceContext } from '../src/services/context.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { submitHold } from '../src/services/submit-hold.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends, type Storage } from '../test/support/backends.ts';
import { NODE, ROOT } from '../test/support/cli.ts';
import {
  killServerProcesses,
  type ServerProcess,
  startServerProcess,
} from '../test/support/server-process.ts';
import { compared, type Figure, percentile } from './lib.ts';
import { triage } from './triage.ts';

const FILE = fileURLToPath(import.meta.url);
const SMALL_HOLDS = 1000;
const LARGE_HOLDS = 240;
/** Characters of each large hold's attachment: its whole submission still fits the API's 1 MiB body limit. */
const ATTACHMENT = 1_000_000;
const TOOL = 'payments.send';
const APPROVER = 'ana@bench.test';
const ADMIN = 'admin@bench.test';
/** The approver decides every payment; the admin (not an approver of these) has an empty inbox. */
const CONFIG = {
  members: [
    { email: ADMIN, name: 'Admin', role: 'admin' },
    { email: APPROVER, name: 'Ana Approver', role: 'approver' },
  ],
  tools: [{ connection: 'SDK', tool: TOOL, classification: 'approval' }],
  rules: [
    { name: 'Payments need an approver', tool: TOOL, effect: 'approval', approvers: ['role:approver'] },
  ],
};
/**
 * Inbox requests the load process keeps in flight while /healthz is probed: one, back to back (a tab
 * refetching as holds change), so a probe's wait is what one inbox request holds the service for.
 */
const LOAD_CONNECTIONS = 1;
/** The pause between two /healthz probes, each on a new connection as a load balancer's. */
const PROBE_PAUSE_MS = 10;

/** The issue's goals for 240 holds of 1 MB: printed beside the figures, never asserted. */
const GOALS = { serverMs: 300, htmlBytes: 500_000, healthzMs: 100 };

const HOLD_REFERENCE = /svc_pa_[A-Za-z0-9_-]{22,64}/g;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  bytes: number;
  text: string;
  /** Round trip in ms: from sending the request to its whole answer read. */
  ms: number;
}

/** One GET (`agent` false: on a connection of its own); never rejects (a failure is status 0 with the error as text). */
function get(
  agent: Agent | false,
  url: string,
  headers: Record<string, string> = {},
  keep = true,
): Promise<Answer> {
  return new Promise((resolve) => {
    const start = performance.now();
    const req = request(url, { agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (keep) chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          bytes,
          text: keep ? Buffer.concat(chunks).toString('utf8') : '',
          ms: performance.now() - start,
        }),
      );
      res.on('error', (error) =>
        resolve({ status: 0, headers: {}, bytes, text: error.message, ms: performance.now() - start }),
      );
    });
    req.on('error', (error) =>
      resolve({ status: 0, headers: {}, bytes: 0, text: error.message, ms: performance.now() - start }),
    );
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------------
// Seeding, through the services (the Core API would take 120 submissions a minute per workspace)

interface Scenario {
  workspace: Workspace;
  holdIds: string[];
  /** Sign-in paths (one-time invite links) by e-mail. */
  invites: Map<string, string>;
}

const IBANS = [
  'DE89370400440532013000',
  'FR1420041010050500013M02606',
  'NL91ABNA0417164300',
  'GB29NWBK60161331926819',
];
const PAYEES = ['Acme Supplies GmbH', 'Boulangerie Martin', 'Northwind Traders', 'Globex Ltd', 'Initech BV'];
const AGENTS = ['billing-bot', 'ap-agent', 'ops-agent', 'procurement-1'];

const smallArguments = (i: number) => ({
  amount: 50 + ((i * 7919) % 995_000) / 100,
  currency: i % 5 === 0 ? 'USD' : 'EUR',
  iban: IBANS[i % IBANS.length],
  payee: { name: PAYEES[i % PAYEES.length], country: IBANS[i % IBANS.length]!.slice(0, 2) },
  memo: `Invoice INV-2026-${String(i).padStart(5, '0')}, net 30, order PO-${4000 + (i % 700)}`,
  due_date: `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`,
});

/** A payment with a scanned invoice: base64 of random bytes, as an agent would attach a file. */
const largeArguments = (i: number) => ({
  amount: 1000 + i,
  currency: 'EUR',
  iban: IBANS[i % IBANS.length],
  attachment: randomBytes((ATTACHMENT / 4) * 3).toString('base64'),
});

async function seedScenario(
  ctx: ServiceContext,
  slug: string,
  count: number,
  args: (i: number) => Record<string, unknown>,
): Promise<Scenario> {
  const workspace = await createWorkspace(ctx, { slug, name: 'Inbox bench' });
  await applyConfig(ctx, workspace, parseConfig(JSON.stringify(CONFIG)));
  const holdIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const { body } = await submitHold(
      ctx,
      {
        workspace,
        environment: 'live',
        requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
      },
      {
        connection: 'SDK',
        toolName: TOOL,
        arguments: args(i),
        agent: { id: AGENTS[i % AGENTS.length]!, label: null },
        context: { run: 'inbox-bench' },
        idempotencyKey: `${slug}-${i}`,
      },
    );
    if (body.status !== 'pending') throw new Error(`bench: a submission in ${slug} was ${body.status}`);
    holdIds.push(body.id);
  }
  const invites = new Map<string, string>();
  for (const email of [APPROVER, ADMIN])
    invites.set(email, new URL((await inviteLink(ctx, workspace, email)).url).pathname);
  return { workspace, holdIds, invites };
}

async function seed(storage: Storage) {
  const settings = { ...storage.env, DATABASE_URL: storage.env.DATABASE_URL ?? '', PUBLIC_URL: '' };
  const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
  try {
    const start = performance.now();
    const small = await seedScenario(ctx, 'inbox-small', SMALL_HOLDS, smallArguments);
    const smallSeconds = (performance.now() - start) / 1000;
    const large = await seedScenario(ctx, 'inbox-large', LARGE_HOLDS, largeArguments);
    const largeSeconds = (performance.now() - start) / 1000 - smallSeconds;
    // PostgreSQL plans by its statistics; without this they depend on when autovacuum last ran.
    if (ctx.db.dialect === 'postgres') await ctx.db.exec('ANALYZE');
    return { small, large, smallSeconds, largeSeconds };
  } finally {
    await ctx.db.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Measuring

/** A signed-in member: the session cookie, sent as a browser would. */
async function signIn(agent: Agent, origin: string, invite: string): Promise<Record<string, string>> {
  const login = await new Promise<{ status: number; cookie: string | undefined }>((resolve, reject) => {
    const req = request(`${origin}${invite}`, { agent, method: 'POST' }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          cookie: /approvals_session=([^;]+)/.exec(String(res.headers['set-cookie']))?.[1],
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
  if (login.status !== 303 || !login.cookie) throw new Error(`bench: sign-in answered ${login.status}`);
  return { cookie: `approvals_session=${login.cookie}` };
}

/** The service's own time for a route: reply.elapsedTime as its /metrics histogram sums it, by status. */
async function serverTotals(agent: Agent, origin: string, route: string) {
  const answer = await get(agent, `${origin}/metrics`);
  if (answer.status !== 200) throw new Error(`bench: /metrics answered ${answer.status}`);
  const totals = new Map<string, { sum: number; count: number }>();
  const line = /^approvals_http_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm;
  for (const [, kind, labels, value] of answer.text.matchAll(line)) {
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(labels!)?.[1];
    if (label('method') !== 'GET' || label('route') !== route) continue;
    const status = label('status')!;
    const total = totals.get(status) ?? { sum: 0, count: 0 };
    total[kind as 'sum' | 'count'] = Number(value);
    totals.set(status, total);
  }
  return totals;
}

interface Series {
  answers: Answer[];
  /** The service's own time of each answered request, ms (empty when /metrics could not tell it). */
  server: number[];
  problems: string[];
}

/**
 * GETs `path` one at a time on one keep-alive connection (a browser tab): `warmup` untimed, then up to
 * `count`, at least `min`, stopping once `budgetMs` has passed. The service's own time of each comes
 * from its /metrics, read between requests (`route` is the route's pattern).
 */
async function series(
  agent: Agent,
  origin: string,
  path: string,
  headers: Record<string, string>,
  options: { route: string; warmup: number; count: number; min: number; budgetMs: number },
): Promise<Series> {
  const problems: string[] = [];
  for (let i = 0; i < options.warmup; i++) await get(agent, origin + path, headers);
  const answers: Answer[] = [];
  const server: number[] = [];
  const begin = performance.now();
  for (
    let i = 0;
    i < options.count && (i < options.min || performance.now() - begin < options.budgetMs);
    i++
  ) {
    const before = await serverTotals(agent, origin, options.route);
    const answer = await get(agent, origin + path, headers);
    const after = await serverTotals(agent, origin, options.route);
    answers.push(answer);
    const ok = after.get('200');
    const was = before.get('200') ?? { sum: 0, count: 0 };
    if (answer.status === 200 && ok && ok.count - was.count === 1) server.push((ok.sum - was.sum) * 1000);
    else if (answer.status === 200) problems.push(`the service's /metrics did not count ${path} once`);
  }
  for (const [n, answer] of answers.entries()) {
    if (answer.status !== 200)
      problems.push(
        `request ${n + 1} answered ${answer.status}: ${answer.text.slice(0, 200).replace(/\s+/g, ' ')}`,
      );
    else if (answer.bytes <= 0) problems.push(`request ${n + 1} answered 200 with an empty body`);
    else if (!/^text\/html/.test(String(answer.headers['content-type'])))
      problems.push(`request ${n + 1} answered ${String(answer.headers['content-type'])}, not HTML`);
  }
  for (const ms of [...answers.map((a) => a.ms), ...server])
    if (!Number.isFinite(ms) || ms < 0) problems.push(`a time of ${ms} ms`);
  return { answers, server, problems: [...new Set(problems)] };
}

/** Distinct seeded holds the page names (in a link, an id, anywhere): how many it shows. */
function named(text: string, seeded: Set<string>): number {
  const found = new Set<string>();
  for (const [id] of text.matchAll(HOLD_REFERENCE)) if (seeded.has(id)) found.add(id);
  return found.size;
}

/**
 * `GET /healthz` as a load balancer probes it: one at a time, each on a new connection, PROBE_PAUSE_MS
 * apart, until `done(probes)`. One at a time, so the probes never queue behind each other: a probe
 * waits only for what the service is doing.
 */
async function probeHealthz(origin: string, done: (probes: number) => boolean) {
  const answers: Answer[] = [];
  while (!done(answers.length)) {
    answers.push(await get(false, `${origin}/healthz`, { connection: 'close' }));
    await sleep(PROBE_PAUSE_MS);
  }
  return answers;
}

// ---------------------------------------------------------------------------------------------------
// The load process: keeps LOAD_CONNECTIONS inbox requests in flight until told to stop

type LoadMessage =
  { type: 'started' } | { type: 'answer'; status: number; bytes: number; ms: number } | { type: 'done' };

const helpers = new Set<ChildProcess>();

async function stopHelper(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/**
 * /healthz probed while the load process keeps inbox requests in flight: at least `minMs`, `minProbes`
 * probes and `minAnswers` inbox answers, at most `maxMs`. Resolves once every request has ended.
 */
async function underLoad(
  origin: string,
  headers: Record<string, string>,
  limits: { minMs: number; minProbes: number; minAnswers: number; maxMs: number },
) {
  const child = spawn(NODE, [FILE, 'load'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  helpers.add(child);
  child.once('exit', () => helpers.delete(child));
  try {
    const inbox: Extract<LoadMessage, { type: 'answer' }>[] = [];
    let started!: () => void;
    let finished!: () => void;
    const begun = new Promise<void>((resolve) => (started = resolve));
    const ended = new Promise<void>((resolve) => (finished = resolve));
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`bench: the load process exited with ${code}`))),
    );
    exited.catch(() => {});
    child.on('message', (message: LoadMessage) => {
      if (message.type === 'started') started();
      else if (message.type === 'answer') inbox.push(message);
      else finished();
    });
    child.send({ origin, headers, connections: LOAD_CONNECTIONS });
    await Promise.race([begun, exited]);
    const start = performance.now();
    const healthz = await probeHealthz(origin, (probes) => {
      const elapsed = performance.now() - start;
      const enough =
        elapsed >= limits.minMs && probes >= limits.minProbes && inbox.length >= limits.minAnswers;
      return enough || elapsed >= limits.maxMs;
    });
    child.send('stop');
    await Promise.race([ended, exited]);
    return { healthz, inbox, seconds: (performance.now() - start) / 1000 };
  } finally {
    await stopHelper(child);
  }
}

function loadProcess() {
  const tell = (message: LoadMessage) => process.send!(message);
  let stopping = false;
  process.on('message', (message: unknown) => {
    if (message === 'stop') stopping = true;
  });
  process.once(
    'message',
    async ({
      origin,
      headers,
      connections,
    }: {
      origin: string;
      headers: Record<string, string>;
      connections: number;
    }) => {
      const agent = new Agent({ keepAlive: true, maxSockets: connections });
      const loop = async () => {
        while (!stopping) {
          const answer = await get(agent, `${origin}/app/inbox`, headers, false);
          tell({ type: 'answer', status: answer.status, bytes: answer.bytes, ms: answer.ms });
        }
      };
      const loops = Array.from({ length: connections }, loop);
      tell({ type: 'started' });
      await Promise.all(loops);
      agent.destroy();
      tell({ type: 'done' });
    },
  );
}

// ---------------------------------------------------------------------------------------------------
// Figures

interface Outcome {
  figures: Figure[];
  skipped: { figure: string; reason: string }[];
  /** The goals, judged, for the summary printed at the end. */
  goals: string[];
}

const ms = (values: number[], p: number) => (p === 100 ? Math.max(...values) : percentile(values, p));
const kb = (bytes: number) => `${(bytes / 1000).toFixed(0)} KB`;
const judged = (met: boolean, text: string) => `goal (issue 20): ${text}: ${met ? 'met' : 'NOT MET'}`;

/** The message of the last error the service logged (pino's JSON lines), if any. */
function lastError(output: string): string | undefined {
  for (const line of output.trim().split('\n').reverse()) {
    try {
      const entry = JSON.parse(line) as {
        level?: number;
        msg?: string;
        err?: { message?: string };
        errorName?: string;
        stack?: string;
      };
      if ((entry.level ?? 0) < 50) continue;
      // The service's 500s log the error's name and frames, never its message (src/web/errors.ts).
      const frame = entry.stack?.split('\n')[0]?.trim();
      const what = [entry.err?.message ?? entry.errorName, frame].filter(Boolean).join(' ');
      return `${entry.msg ?? ''}${what ? `: ${what}` : ''}`.slice(0, 300);
    } catch {
      if (line.trim()) return line.slice(0, 300);
    }
  }
  return undefined;
}

async function onBackend(name: string, storage: Storage, out: Outcome) {
  const seeded = await seed(storage);
  const figure = (label: string, value: number, unit: string, note?: string): Figure => ({
    bench: 'inbox',
    figure: `${name}: ${label}`,
    value,
    unit,
    ...(note && { note }),
  });
  // The per-member app quota (600 a minute) is for people; this sends more than a person does. Errors
  // only are logged, so a failure can say what went wrong.
  const service: ServerProcess = await startServerProcess(storage, {
    APP_RATE_LIMIT: '0',
    DEADLINE_SWEEP_MS: '60000',
    LOG_LEVEL: 'error',
  });
  const failed = (label: string, problems: string[]) => {
    process.exitCode = 1;
    const logged = lastError(service.output());
    const reason = [...problems.slice(0, 3), ...(logged ? [`the service logged: ${logged}`] : [])];
    out.skipped.push({ figure: `${name}: ${label}`, reason: `FAILED: ${reason.join('; ')}` });
  };
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const origin = service.url;
    const sessions = {
      small: await signIn(agent, origin, seeded.small.invites.get(APPROVER)!),
      large: await signIn(agent, origin, seeded.large.invites.get(APPROVER)!),
      empty: await signIn(agent, origin, seeded.small.invites.get(ADMIN)!),
    };

    // The floor: /healthz alone, the service idle.
    for (let i = 0; i < 50; i++) await get(agent, `${origin}/healthz`);
    const idle: Answer[] = [];
    for (let i = 0; i < 300; i++) idle.push(await get(agent, `${origin}/healthz`));
    const bad = idle.filter((a) => a.status !== 200 || !Number.isFinite(a.ms) || a.ms < 0);
    if (bad.length > 0)
      throw new Error(`bench: /healthz answered ${bad[0]!.status} (${bad[0]!.text.slice(0, 200)})`);
    const idleMs = idle.map((a) => a.ms);
    const floor = {
      p50: figure(
        'GET /healthz idle, p50',
        ms(idleMs, 50),
        'ms',
        '300 requests one at a time on one keep-alive connection, from the bench process over loopback; the floor of every time here',
      ),
      p95: figure('GET /healthz idle, p95', ms(idleMs, 95), 'ms'),
      max: figure('GET /healthz idle, max', ms(idleMs, 100), 'ms'),
    };
    // The floor of the probes under load: the same probes, the service idle.
    const probes = await probeHealthz(origin, (n) => n >= 200);
    const badProbe = probes.find((a) => a.status !== 200 || !Number.isFinite(a.ms) || a.ms < 0);
    if (badProbe) throw new Error(`bench: a /healthz probe answered ${badProbe.status} (${badProbe.text})`);
    const probeMs = probes.map((a) => a.ms);
    const probeFloor = {
      p50: figure(
        'GET /healthz probe idle, p50',
        ms(probeMs, 50),
        'ms',
        `${probes.length} probes one at a time, each on a new connection (as a load balancer's), ${PROBE_PAUSE_MS} ms apart; the floor of the probes during inbox load`,
      ),
      max: figure('GET /healthz probe idle, max', ms(probeMs, 100), 'ms'),
    };
    out.figures.push(floor.p50, floor.p95, floor.max, probeFloor.p50, probeFloor.max);

    // The inbox with nothing waiting: the page's fixed cost, and the floor of the sizes.
    const emptyLabel = 'GET /app/inbox, nothing waiting';
    const empty = await series(agent, origin, '/app/inbox', sessions.empty, {
      route: '/app/inbox',
      warmup: 3,
      count: 30,
      min: 10,
      budgetMs: 5000,
    });
    let emptyBytes: Figure | undefined;
    if (empty.problems.length > 0) failed(emptyLabel, empty.problems);
    else {
      const times = empty.answers.map((a) => a.ms);
      emptyBytes = figure(`${emptyLabel}, HTML bytes`, empty.answers[0]!.bytes, 'bytes');
      out.figures.push(
        compared(
          figure(
            `${emptyLabel}, p50`,
            ms(times, 50),
            'ms',
            `the admin of the 1,000-hold workspace (not an approver of its payments); ${times.length} requests`,
          ),
          floor.p50,
        ),
        emptyBytes,
      );
    }

    const scenarios = [
      {
        label: `${SMALL_HOLDS.toLocaleString('en-US')} small holds`,
        what: `${SMALL_HOLDS} pending payments (amount, currency, IBAN, payee, memo, due date; about 200 bytes of JSON each) for one approver, seeded through submitHold in ${seeded.smallSeconds.toFixed(1)} s`,
        scenario: seeded.small,
        session: sessions.small,
        sequence: { warmup: 2, count: 30, min: 5, budgetMs: 15_000 },
        goals: false,
      },
      {
        label: `${LARGE_HOLDS} holds of 1 MB`,
        what: `${LARGE_HOLDS} pending payments each with a ${ATTACHMENT.toLocaleString('en-US')}-character base64 attachment for one approver, seeded through submitHold in ${seeded.largeSeconds.toFixed(1)} s`,
        scenario: seeded.large,
        session: sessions.large,
        sequence: { warmup: 1, count: 20, min: 5, budgetMs: 25_000 },
        goals: true,
      },
    ];
    for (const s of scenarios) {
      const label = `GET /app/inbox, ${s.label}`;
      const measured = await series(agent, origin, '/app/inbox', s.session, {
        route: '/app/inbox',
        ...s.sequence,
      });
      const seededIds = new Set(s.scenario.holdIds);
      const shown = measured.answers.map((a) => (a.status === 200 ? named(a.text, seededIds) : 0));
      if (measured.problems.length === 0 && shown.some((n) => n === 0))
        measured.problems.push('a page names none of the seeded holds');
      if (measured.problems.length > 0) failed(label, measured.problems);
      else {
        const times = measured.answers.map((a) => a.ms);
        const bytes = measured.answers[0]!.bytes;
        const server = measured.server;
        const serverP95 = ms(server, 95);
        const notes = {
          p50: `${s.what}; ${times.length} requests one at a time on one keep-alive connection, round trip from the bench process to the whole answer read`,
          server: `the service's own time (reply.elapsedTime, through the last byte written, as its /metrics histogram sums it around each request; the app sends no Server-Timing header)${s.goals ? `; ${judged(serverP95 < GOALS.serverMs, `p95 under ${GOALS.serverMs} ms`)}` : ''}`,
          bytes: `the first answer; it names ${shown[0]} of the ${seededIds.size} seeded holds${s.goals ? `; ${judged(bytes < GOALS.htmlBytes, `under ${kb(GOALS.htmlBytes)}`)}` : ''}`,
        };
        out.figures.push(
          compared(figure(`${label}, p50`, ms(times, 50), 'ms', notes.p50), floor.p50),
          compared(figure(`${label}, p95`, ms(times, 95), 'ms'), floor.p95),
          compared(figure(`${label}, server time p50`, ms(server, 50), 'ms', notes.server), floor.p50),
          compared(figure(`${label}, server time p95`, serverP95, 'ms'), floor.p95),
          emptyBytes
            ? compared(figure(`${label}, HTML bytes`, bytes, 'bytes', notes.bytes), emptyBytes)
            : figure(`${label}, HTML bytes`, bytes, 'bytes', notes.bytes),
          figure(`${label}, seeded holds on the page`, shown[0]!, 'holds'),
        );
        if (s.goals)
          out.goals.push(
            `${name}: ${judged(serverP95 < GOALS.serverMs, `inbox server time p95 under ${GOALS.serverMs} ms`)} (${serverP95.toFixed(0)} ms; p50 ${ms(server, 50).toFixed(0)} ms)`,
            `${name}: ${judged(bytes < GOALS.htmlBytes, `inbox HTML under ${kb(GOALS.htmlBytes)}`)} (${kb(bytes)})`,
          );
      }

      // /healthz while inbox requests run, from a load process of their own.
      const loadLabel = `GET /healthz probe during inbox load, ${s.label}`;
      const typical =
        measured.answers.length > 0
          ? ms(
              measured.answers.map((a) => a.ms),
              50,
            )
          : 1000;
      const loaded = await underLoad(origin, s.session, {
        minMs: 5000,
        minProbes: 30,
        minAnswers: 3,
        maxMs: Math.max(20_000, 4 * typical),
      });
      const problems: string[] = [];
      const badInbox = loaded.inbox.filter((a) => a.status !== 200 || a.bytes <= 0);
      if (loaded.inbox.length === 0) problems.push('no inbox request finished during the sampling');
      if (badInbox.length > 0)
        problems.push(
          `${badInbox.length} of ${loaded.inbox.length} inbox requests answered ${badInbox[0]!.status} (${badInbox[0]!.bytes} bytes)`,
        );
      const badHealth = loaded.healthz.filter((a) => a.status !== 200 || !Number.isFinite(a.ms) || a.ms < 0);
      if (badHealth.length > 0)
        problems.push(`${badHealth.length} /healthz answered ${badHealth[0]!.status}`);
      if (problems.length > 0) failed(loadLabel, problems);
      else {
        const times = loaded.healthz.map((a) => a.ms);
        const max = ms(times, 100);
        const note = `${loaded.healthz.length} probes in ${loaded.seconds.toFixed(1)} s (one at a time, each on a new connection, ${PROBE_PAUSE_MS} ms apart) while a load process kept ${LOAD_CONNECTIONS === 1 ? 'one inbox request' : `${LOAD_CONNECTIONS} inbox requests`} in flight, back to back (${loaded.inbox.length} answered, all 200, p50 ${ms(
          loaded.inbox.map((a) => a.ms),
          50,
        ).toFixed(
          0,
        )} ms)${s.goals ? `; ${judged(max < GOALS.healthzMs, `max under ${GOALS.healthzMs} ms`)}` : ''}`;
        out.figures.push(
          compared(figure(`${loadLabel}, p50`, ms(times, 50), 'ms', note), probeFloor.p50),
          compared(figure(`${loadLabel}, max`, max, 'ms'), probeFloor.max),
        );
        if (s.goals)
          out.goals.push(
            `${name}: ${judged(max < GOALS.healthzMs, `/healthz under ${GOALS.healthzMs} ms during inbox load`)} (max ${max.toFixed(0)} ms, p50 ${ms(times, 50).toFixed(1)} ms)`,
          );
      }
    }

    // One 1 MB hold's own page.
    const holdLabel = 'GET /app/holds/<id>, one hold of 1 MB';
    const holdId = seeded.large.holdIds[0]!;
    const page = await series(agent, origin, `/app/holds/${holdId}`, sessions.large, {
      route: '/app/holds/:id',
      warmup: 1,
      count: 20,
      min: 5,
      budgetMs: 8000,
    });
    if (page.problems.length === 0 && page.answers.some((a) => !a.text.includes(holdId)))
      page.problems.push('the page does not name its hold');
    if (page.problems.length > 0) failed(holdLabel, page.problems);
    else {
      const times = page.answers.map((a) => a.ms);
      out.figures.push(
        compared(
          figure(`${holdLabel}, p50`, ms(times, 50), 'ms', `${times.length} requests one at a time`),
          floor.p50,
        ),
        compared(figure(`${holdLabel}, server time p50`, ms(page.server, 50), 'ms'), floor.p50),
        emptyBytes
          ? compared(figure(`${holdLabel}, HTML bytes`, page.answers[0]!.bytes, 'bytes'), emptyBytes)
          : figure(`${holdLabel}, HTML bytes`, page.answers[0]!.bytes, 'bytes'),
      );
    }
  } finally {
    agent.destroy();
    await killServerProcesses();
  }
}

export async function run(): Promise<{ figures: Figure[]; skipped: { figure: string; reason: string }[] }> {
  const out: Outcome = { figures: [], skipped: [], goals: [] };
  try {
    for (const backend of backends) {
      if (backend.skip) {
        out.skipped.push({ figure: `${backend.name}: every inbox figure`, reason: backend.skip });
        continue;
      }
      const storage = await backend.create();
      try {
        await onBackend(backend.name, storage, out);
      } finally {
        await storage.drop();
      }
      const triaged = await triage(backend.name, backend);
      out.figures.push(...triaged.figures);
      out.skipped.push(...triaged.failed);
      if (triaged.failed.length > 0) process.exitCode = 1;
    }
  } finally {
    await Promise.all([...helpers].map(stopHelper));
    await killServerProcesses();
  }
  if (out.goals.length > 0)
    console.error(
      `\ninbox, the goals of issue 20 for ${LARGE_HOLDS} holds of 1 MB:\n  ${out.goals.join('\n  ')}\n`,
    );
  return { figures: out.figures, skipped: out.skipped };
}

if (import.meta.main) {
  // The load process lives only as long as the benchmark that started it.
  process.once('disconnect', () => process.exit(0));
  if (process.argv[2] === 'load') loadProcess();
  else
    console.error('usage: bench/inbox.ts load (the load process of the benchmark; run it with bench/run.ts)');
}
