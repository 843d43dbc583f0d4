/**
 * The oversight and activity reports over 100,000 holds as CSV and PDF (issue 9): time, bytes and peak
 * RSS. The activity PDF is also compared with the activity CSV of the same holds (issue 22).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { newHoldReference } from '../src/domain/ids.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceContext } from '../src/services/context.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import type { Sql } from '../src/store/db.ts';
import { listMembers } from '../src/store/members.ts';
import { backends, type Storage } from '../test/support/backends.ts';
import { freePort } from '../test/support/mcp-upstream.ts';
import { SERVICE_ARGS } from '../test/support/server-process.ts';
import { compared, type Figure, percentile } from './lib.ts';

const HOLDS = 100_000;
const BATCH = 1000;
const ROWS_PER_INSERT = 25;
const PAGE = 1000;
const DAY = 86_400_000;
/** The period: the 30 whole days before today (UTC), so pending holds are not yet overdue. */
const END = Math.floor(Date.now() / DAY) * DAY;
const START = END - 30 * DAY;
const PERIOD = `from=${new Date(START).toISOString()}&to=${new Date(END).toISOString()}`;
const ROOT = join(import.meta.dirname, '..');

/** mulberry32: the same holds on every machine. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  return { next, pick };
}
type Random = ReturnType<typeof random>;

const CONFIG = {
  members: [
    { email: 'admin@bench.test', name: 'Admin', role: 'admin' },
    { email: 'ana@bench.test', name: 'Ana Approver', role: 'approver' },
    { email: 'bob@bench.test', name: 'Bob Approver', role: 'approver' },
    { email: 'cy@bench.test', name: 'Cy Approver', role: 'approver' },
    { email: 'vic@bench.test', name: 'Vic Viewer', role: 'viewer' },
  ],
};

/** connection, tool, classification; the last one is still unclassified. */
const TOOLS = [
  ['SDK', 'read_balance', 'allow'],
  ['SDK', 'list_invoices', 'allow'],
  ['files', 'read_file', 'allow'],
  ['SDK', 'delete_account', 'deny'],
  ['SDK', 'wire_money', 'approval'],
  ['SDK', 'send_invoice', 'approval'],
  ['SDK', 'refund_payment', 'approval'],
  ['files', 'write_file', 'approval'],
  ['github', 'merge_pull_request', 'new'],
] as const;
const ALLOWED = TOOLS.filter(([, , c]) => c === 'allow');
const DENIED = TOOLS.filter(([, tool]) => tool === 'delete_account' || tool === 'wire_money');
const FOR_PEOPLE = TOOLS.filter(([, , c]) => c === 'approval' || c === 'new');
const AGENTS = ['billing-bot', 'support-bot', 'ops-agent', 'research-1', 'sales-assistant', 'agent-7'];
const CHANNELS = ['inbox', 'inbox', 'inbox', 'email', 'email', 'slack', 'slack', 'widget', 'sms'] as const;

/** Issue 9's mix, as cumulative shares. */
const MIX = [
  ['allowed', 0.4],
  ['denied', 0.5],
  ['approved', 0.85],
  ['rejected', 0.95],
  ['expired', 0.99],
  ['pending', 1],
] as const;

const HOLD_COLUMNS = [
  'id',
  'workspace_id',
  'environment',
  'connection',
  'tool_name',
  'agent_id',
  'agent_label',
  'arguments',
  'context',
  'idempotency_key',
  'fingerprint',
  'submit_status',
  'status',
  'rule_name',
  'approvers',
  'approvals_required',
  'approvals_received',
  'created_at',
  'expires_at',
  'verdict',
  'reason',
  'channel',
  'decided_at',
  'execution_status',
  'execution_started_at',
  'execution_completed_at',
  'execution_outcome',
] as const;
type Value = string | number | null;
type HoldRow = Record<(typeof HOLD_COLUMNS)[number], Value>;
const DECISION_COLUMNS = ['hold_id', 'member_id', 'verdict', 'comment', 'channel', 'decided_at'];

/** 10 s to about 5.5 h, most of them short. */
const delay = (r: Random) => Math.round(10_000 * 2000 ** r.next());

/** Hold `i` of the mix, with its people's decisions (rows of DECISION_COLUMNS). */
function makeHold(i: number, r: Random, workspaceId: string, deciders: string[]) {
  const roll = r.next();
  const kind = MIX.find(([, upTo]) => roll < upTo)![0];
  const [connection, tool] = r.pick(kind === 'allowed' ? ALLOWED : kind === 'denied' ? DENIED : FOR_PEOPLE);
  const createdAt = START + Math.floor(((i + r.next()) * (END - START)) / HOLDS);
  const agent = r.pick(AGENTS);
  const required = kind !== 'allowed' && kind !== 'denied' && r.next() < 0.2 ? 2 : 1;
  const hold: HoldRow = {
    id: newHoldReference(),
    workspace_id: workspaceId,
    environment: r.next() < 0.9 ? 'live' : 'test',
    connection,
    tool_name: tool,
    agent_id: agent,
    agent_label: agent.replace('-', ' '),
    arguments: '{}',
    context: '{}',
    idempotency_key: `bench-${i}`,
    fingerprint: `fp-${i}`,
    submit_status: kind === 'allowed' ? 'allowed' : kind === 'denied' ? 'denied' : 'pending',
    status: kind === 'allowed' ? 'auto_allowed' : kind === 'denied' ? 'rejected' : 'pending',
    rule_name: null,
    approvers: '[]',
    approvals_required: required,
    approvals_received: 0,
    created_at: createdAt,
    expires_at: kind === 'allowed' || kind === 'denied' ? null : createdAt + 6 * 3_600_000,
    verdict: null,
    reason: null,
    channel: null,
    decided_at: null,
    execution_status: null,
    execution_started_at: null,
    execution_completed_at: null,
    execution_outcome: null,
  };
  const decisions: Value[][] = [];
  if (kind === 'denied') {
    const denial = { verdict: 'reject', reason: 'Blocked by policy', channel: 'rule', decided_at: createdAt };
    Object.assign(hold, { rule_name: 'No risky calls', ...denial });
  } else if (kind === 'approved' || kind === 'rejected') {
    const verdict = kind === 'approved' ? 'approve' : 'reject';
    const first = Math.floor(r.next() * deciders.length);
    let at = createdAt;
    for (let n = 0; n < (kind === 'approved' ? required : 1); n++) {
      at += delay(r);
      const channel = r.pick(CHANNELS);
      decisions.push([hold.id, deciders[(first + n) % deciders.length]!, verdict, null, channel, at]);
      Object.assign(hold, { verdict, channel, decided_at: at });
    }
    hold.status = kind;
    hold.approvals_received = kind === 'approved' ? required : 0;
  } else if (kind === 'expired') {
    hold.status = 'expired';
  } else if (kind === 'pending') {
    hold.expires_at = END + 7 * DAY;
  }
  // The proxy runs what it let through: allowed calls keep their status, approved ones become executed.
  if (connection === 'files' && (kind === 'allowed' || kind === 'approved')) {
    const startedAt = (hold.decided_at ?? createdAt) as number;
    Object.assign(hold, {
      status: kind === 'approved' ? 'executed' : 'auto_allowed',
      execution_status: 'executed',
      execution_started_at: startedAt,
      execution_completed_at: startedAt + 120,
      execution_outcome: '{"content":[]}',
    });
  }
  return { hold, decisions };
}

/**
 * `rows` in INSERTs of ROWS_PER_INSERT rows. SQLite binds numbered parameters (`$n` becomes `?n`) in
 * time that grows with the square of their number, so a statement stays small.
 */
async function insertRows(sql: Sql, table: string, columns: readonly string[], rows: Value[][]) {
  for (let first = 0; first < rows.length; first += ROWS_PER_INSERT) {
    const chunk = rows.slice(first, first + ROWS_PER_INSERT);
    const values = chunk.map(
      (row, r) => `(${row.map((_, c) => `$${r * columns.length + c + 1}`).join(', ')})`,
    );
    await sql.run(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')}`, chunk.flat());
  }
}

/** A workspace with five members, its tools, an API key, and HOLDS holds in the period. */
async function seed(ctx: ServiceContext): Promise<{ workspaceId: string; key: string }> {
  const workspace = await createWorkspace(ctx, { slug: 'reports-bench', name: 'Reports bench' });
  await applyConfig(ctx, workspace, parseConfig(JSON.stringify(CONFIG)));
  const { key } = await createApiKey(ctx, { workspace, env: 'live' });
  const deciders = (await listMembers(ctx.db, workspace.id))
    .filter((m) => m.role !== 'viewer')
    .map((m) => m.id);
  await insertRows(
    ctx.db,
    'tools',
    ['workspace_id', 'connection', 'name', 'classification', 'first_seen_at'],
    TOOLS.map(([connection, tool, classification]) => [
      workspace.id,
      connection,
      tool,
      classification,
      START,
    ]),
  );
  const r = random(0x5eed);
  for (let first = 0; first < HOLDS; first += BATCH) {
    const made = Array.from({ length: BATCH }, (_, n) => makeHold(first + n, r, workspace.id, deciders));
    await ctx.db.transaction(async (tx) => {
      await insertRows(
        tx,
        'holds',
        HOLD_COLUMNS,
        made.map(({ hold }) => HOLD_COLUMNS.map((column) => hold[column])),
      );
      const decisions = made.flatMap((m) => m.decisions);
      if (decisions.length > 0) await insertRows(tx, 'hold_decisions', DECISION_COLUMNS, decisions);
    });
  }
  // PostgreSQL plans by its statistics, which autovacuum gathers soon after a table grows this much.
  if (ctx.db.dialect === 'postgres') await ctx.db.exec('ANALYZE holds; ANALYZE hold_decisions');
  return { workspaceId: workspace.id, key };
}

/** Median wall time of `runs` calls after one untimed call, in ms. */
async function timed(work: () => Promise<unknown>, runs = 5): Promise<number> {
  await work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await work();
    times.push(performance.now() - start);
  }
  return percentile(times, 50);
}

/** The floors: one COUNT(*) over the period, and the activity report's own SELECT in keyset pages. */
async function floors(ctx: ServiceContext, workspaceId: string) {
  const count = await timed(async () => {
    const row = await ctx.db.one<{ n: unknown }>(
      'SELECT COUNT(*) AS n FROM holds h WHERE h.workspace_id = $1 AND h.created_at >= $2 AND h.created_at < $3',
      [workspaceId, START, END],
    );
    if (Number(row?.n) !== HOLDS) throw new Error(`bench: counted ${String(row?.n)} holds`);
  });
  const select = (keyset: string) =>
    `SELECT h.id, h.created_at AS "createdAt", h.connection, h.tool_name AS "toolName",
       h.agent_id AS "agentId", h.environment, h.status, h.verdict, h.channel,
       h.decided_at AS "decidedAt", h.execution_status AS "executionStatus"
     FROM holds h WHERE h.workspace_id = $1 AND h.created_at >= $2 AND h.created_at < $3${keyset}
     ORDER BY h.created_at, h.id LIMIT ${PAGE}`;
  const rows = await timed(async () => {
    let page = await ctx.db.all<{ createdAt: unknown; id: string }>(select(''), [workspaceId, START, END]);
    let read = page.length;
    while (page.length === PAGE) {
      const last = page[PAGE - 1]!;
      page = await ctx.db.all(select(' AND (h.created_at, h.id) > ($4, $5)'), [
        workspaceId,
        START,
        END,
        Number(last.createdAt),
        last.id,
      ]);
      read += page.length;
    }
    if (read !== HOLDS) throw new Error(`bench: paged through ${read} holds`);
  }, 3);
  return { count, rows };
}

interface Service {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** The service in a child process as `npm start` runs it, on `storage`, answering on a free loopback port. */
async function startChild(storage: Storage): Promise<Service> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, SERVICE_ARGS, {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: '',
      DATABASE_URL: '',
      ...storage.env,
      LOG_LEVEL: 'silent',
      DEADLINE_SWEEP_MS: '60000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`bench: the service exited early:\n${output}`);
    if (Date.now() > until) throw new Error(`bench: the service did not answer at ${url}:\n${output}`);
    const ok = await fetch(`${url}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A GET whose whole body is read: status, bytes, line feeds, and the head and tail of the body. */
function download(url: string, key: string) {
  return new Promise<{ status: number; bytes: number; lines: number; head: string; tail: string }>(
    (resolve, reject) => {
      const request = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (response) => {
        let bytes = 0;
        let lines = 0;
        let head = '';
        let tail = '';
        response.on('data', (chunk: Buffer) => {
          if (bytes < 4096) head += chunk.toString('latin1', 0, 4096);
          bytes += chunk.length;
          for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
          tail = (tail + chunk.toString('latin1', Math.max(0, chunk.length - 64))).slice(-64);
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes, lines, head, tail }));
        response.on('error', reject);
      });
      request.on('error', reject);
    },
  );
}

/** VmRSS and VmHWM of `pid`, in KiB. */
function memory(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
  return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
}

/**
 * One report from a fresh service: a warm-up over an empty period (loads the code and fonts), then
 * the timed GET, with the child's RSS sampled and its peak taken from VmHWM, reset just before.
 */
async function measureReport(storage: Storage, key: string, path: string) {
  const service = await startChild(storage);
  try {
    const empty = await download(
      `${service.url}${path}&from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z`,
      key,
    );
    if (empty.status !== 200) throw new Error(`bench: ${path} answered ${empty.status}: ${empty.head}`);
    writeFileSync(`/proc/${service.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
    const before = memory(service.pid).rss;
    let sampled = before;
    const sampler = setInterval(() => (sampled = Math.max(sampled, memory(service.pid).rss)), 5);
    const start = performance.now();
    const body = await download(`${service.url}${path}&${PERIOD}`, key);
    const ms = performance.now() - start;
    clearInterval(sampler);
    const peak = Math.max(sampled, memory(service.pid).hwm);
    if (body.status !== 200) throw new Error(`bench: ${path} answered ${body.status}: ${body.head}`);
    return { ms, body, growthMiB: (peak - before) / 1024, beforeMiB: before / 1024 };
  } finally {
    await service.stop();
  }
}

const REPORTS = [
  { name: 'oversight CSV', path: '/api/v1/reports/oversight?format=csv' },
  { name: 'oversight PDF', path: '/api/v1/reports/oversight?format=pdf' },
  { name: 'activity CSV', path: '/api/v1/reports/activity?format=csv' },
  { name: 'activity PDF', path: '/api/v1/reports/activity?format=pdf' },
];

/** What a body must look like, so a fast error page is never taken for a fast report. */
function check(name: string, body: Awaited<ReturnType<typeof download>>) {
  const ok = name.endsWith('PDF')
    ? body.head.startsWith('%PDF-') && body.tail.trimEnd().endsWith('%%EOF')
    : name.startsWith('activity')
      ? body.lines === HOLDS + 1
      : body.head.includes(`totals,,holds,${HOLDS}\r\n`);
  if (!ok)
    throw new Error(`bench: ${name} is not the expected report (${body.bytes} bytes, ${body.lines} lines)`);
}

/** Seeds `storage` through a context of its own and measures the floors; the context is closed after. */
async function prepare(storage: Storage) {
  const settings = { ...storage.env, DATABASE_URL: storage.env.DATABASE_URL ?? '', PUBLIC_URL: '' };
  const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
  try {
    const start = performance.now();
    const { workspaceId, key } = await seed(ctx);
    const seedSeconds = (performance.now() - start) / 1000;
    return { key, seedSeconds, ...(await floors(ctx, workspaceId)) };
  } finally {
    await ctx.db.close();
  }
}

async function onBackend(name: string, storage: Storage): Promise<Figure[]> {
  const prepared = await prepare(storage);
  const countFloor: Figure = {
    bench: 'reports',
    figure: `SELECT COUNT(*) over the period, ${name}`,
    value: prepared.count,
    unit: 'ms',
    note: `floor of the oversight figures: ${HOLDS} holds over 30 days in one workspace (seeded in ${prepared.seedSeconds.toFixed(1)} s); median of 5`,
  };
  const rowsFloor: Figure = {
    bench: 'reports',
    figure: `SELECT ${HOLDS} rows in pages of ${PAGE}, ${name}`,
    value: prepared.rows,
    unit: 'ms',
    note: 'floor of the activity reports: their keyset SELECT through ctx.db.all, no approvers, nothing rendered; median of 3',
  };
  const figures: Figure[] = [countFloor, rowsFloor];
  const measured: Record<string, { time: Figure; growth: Figure }> = {};
  for (const report of REPORTS) {
    const result = await measureReport(storage, prepared.key, report.path);
    check(report.name, result.body);
    const time: Figure = {
      bench: 'reports',
      figure: `${report.name}, ${name}`,
      value: result.ms,
      unit: 'ms',
      ...(report === REPORTS[0] && {
        note: 'one GET from the service in a child process (after a warm-up over an empty period), whole body read',
      }),
    };
    const growth: Figure = {
      bench: 'reports',
      figure: `${report.name} peak RSS growth, ${name}`,
      value: result.growthMiB,
      unit: 'MiB',
      ...(report === REPORTS[0] && {
        note: `memory is the service process's peak RSS growth during the request (VmHWM reset before, minus VmRSS before: ${result.beforeMiB.toFixed(0)} MiB here)`,
      }),
      ...(report.name === 'activity PDF' && {
        note: `issue 43's goal, under 100 MiB in every run: ${result.growthMiB < 100 ? 'met in this one' : 'NOT MET'}`,
      }),
    };
    measured[report.name] = { time, growth };
    figures.push(
      compared(time, report.name.startsWith('oversight') ? countFloor : rowsFloor),
      { bench: 'reports', figure: `${report.name} size, ${name}`, value: result.body.bytes, unit: 'bytes' },
      growth,
    );
  }
  // Issue 22: the activity PDF beside the activity CSV of the same holds, read from the same storage.
  const [csv, pdf] = [measured['activity CSV']!, measured['activity PDF']!];
  figures.push(
    compared(
      {
        ...pdf.time,
        figure: `activity PDF against the activity CSV, ${name}`,
        note: 'the same GET as the activity PDF figure, beside the activity CSV of the same holds',
      },
      csv.time,
    ),
    compared(
      { ...pdf.growth, figure: `activity PDF peak RSS growth against the activity CSV, ${name}` },
      csv.growth,
    ),
  );
  return figures;
}

export async function run(): Promise<{ figures: Figure[]; skipped: { figure: string; reason: string }[] }> {
  const figures: Figure[] = [];
  const skipped: { figure: string; reason: string }[] = [];
  for (const backend of backends) {
    if (backend.skip) {
      skipped.push({ figure: `every report on ${backend.name}`, reason: 'TEST_DATABASE_URL is not set' });
      continue;
    }
    const storage = await backend.create();
    try {
      figures.push(...(await onBackend(backend.name, storage)));
    } finally {
      await storage.drop();
    }
  }
  return { figures, skipped };
}
