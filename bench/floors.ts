/**
 * The floors of the submission figures (bench/holds.ts): the database work a submission cannot do
 * without, made directly with the driver the service uses, in the same run as the figures they judge.
 *
 * Same as the service:
 * - the driver and its settings: a `pg` Pool of 10 connections (src/store/postgres.ts), one checked
 *   out per transaction, statements with parameters prepared once per connection under a name;
 *   on SQLite the service's own adapter (src/store/sqlite.ts: WAL, the transactions begun in one turn
 *   of the event loop share one `BEGIN IMMEDIATE … COMMIT`, each in a savepoint of its own, none
 *   answered before a sync of the log that began after the COMMIT, made off the event loop);
 * - the tables: a schema (PostgreSQL) or a file (SQLite) of its own, made by the service's own
 *   migrations, so the holds, evidence and evidence_heads tables have the same columns, keys, foreign
 *   keys and indexes (each hold row updates the same seven indexes);
 * - the rows: an auto-allowed hold as the load generator's submissions make it (about the same sizes
 *   of arguments, context, summary, fingerprint), and its `hold.submitted` evidence entry (about 480
 *   bytes of JSON) with a SHA-256 chain hash, the head moved to it with a signature-sized text;
 * - the shape of the transaction: the chain head's row lock (`SELECT … FOR UPDATE`, what
 *   `lockChainHead` sends; a plain SELECT inside the write transaction on SQLite), then the hold, the
 *   evidence entry and the head's update; on PostgreSQL in one statement of data-modifying CTEs, as
 *   the service's `writeTogether` sends them, on SQLite one after another; then COMMIT, durable
 *   (`synchronous_commit = on`, the server's default; SQLite's log synced before the answer);
 * - the concurrency: 24 transactions at a time over the same 600 workspaces (or one), or paced at the
 *   same fixed rate as the load generator (`paced`, bench/load.ts).
 *
 * What differs, and is what the ratio measures: no HTTP, no key lookup, no rate-limit count (on
 * PostgreSQL an upsert committed of its own per request), no read of the idempotency key, rule set,
 * tool and counts after the lock, no rules, no canonical JSON, no Ed25519 signature (random bytes of
 * its length), no outbox rows, no event to the workers; and the transactions come from one process
 * with no service in it, so the floor has the machine's two cores to itself and PostgreSQL.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDb } from '../src/store/open.ts';
import { postgres } from '../test/support/backends.ts';
import { cpuMicros } from './lib.ts';
import { paced } from './load.ts';

export interface FloorRun {
  /** Transactions committed, each checked stored afterwards. */
  committed: number;
  perSecond: number;
  /**
   * This process's CPU time per transaction, in µs (the warm-up's too, over its transactions): the
   * floor's client side, as the service's figure is the service's; the database server's is in neither.
   */
  cpuPerTx: number;
}

export interface PacedRun {
  p50: number;
  p99: number;
  committed: number;
}

/** One kind of transaction against a floor database: `submission` on `workspace`, or a bare INSERT. */
interface FloorDb {
  submission(workspace: string): Promise<void>;
  insertOnly(workspace: string): Promise<void>;
  countHolds(): Promise<number>;
  close(): Promise<void>;
}

const HOLD_COLUMNS = `id, workspace_id, environment, connection, tool_name, agent_id, agent_label, arguments,
  context, idempotency_key, fingerprint, submit_status, status, rule_name, approvers, approvals_required,
  approvals_received, created_at, expires_at, verdict, reason, channel, decided_at, mcp_server_id, call_key,
  arguments_summary, arguments_size`;
const HOLD_VALUES = Array.from({ length: 27 }, (_, i) => `$${i + 1}`).join(', ');
const INSERT_HOLD = `INSERT INTO holds (${HOLD_COLUMNS}) VALUES (${HOLD_VALUES})`;
const INSERT_ENTRY = `INSERT INTO evidence (workspace_id, seq, prev_hash, type, occurred_at, data, hash)
  VALUES ($1, $2, $3, $4, $5, $6, $7)`;
const UPDATE_HEAD = `UPDATE evidence_heads SET seq = $2, hash = $3, signed_at = $4, key_id = $5, signature = $6
  WHERE workspace_id = $1`;
const LOCK_HEAD = `SELECT seq, hash, signed_at AS "signedAt", key_id AS "keyId", signature FROM evidence_heads
  WHERE workspace_id = $1 FOR UPDATE`;

let made = 0;
const run = `${process.pid}-${Date.now().toString(36)}`;

/** An auto-allowed hold's 27 columns, as the load generator's submission makes it. */
function holdParams(workspace: string, now: number): unknown[] {
  made += 1;
  const args = JSON.stringify({ amount: 100 + (made % 900), currency: 'EUR', invoice: `INV-${made}` });
  return [
    `svc_pa_${randomBytes(16).toString('base64url')}`,
    workspace,
    'live',
    'SDK',
    'read_balance',
    'load-agent',
    'Load agent',
    args,
    JSON.stringify({ run }),
    `${run}-${made}`,
    createHash('sha256').update(args).digest('hex'),
    'allowed',
    'auto_allowed',
    'Tool classified allow',
    '[]',
    0,
    0,
    now,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    args.replace(/[{}]/g, '').replace(/"(\w+)":/g, '$1='),
    args.length,
  ];
}

/** The hold's `hold.submitted` entry after `head`, and the head moved to it: [entry params, head params]. */
function entryParams(workspace: string, head: { seq: number; hash: string }, hold: unknown[], now: number) {
  const data = JSON.stringify({
    agent: { id: 'load-agent', label: 'Load agent' },
    approvals_required: 0,
    approvers: [],
    arguments: JSON.parse(hold[7] as string) as unknown,
    connection: 'SDK',
    context: { run },
    effect: 'allow',
    environment: 'live',
    expires_at: null,
    facts: { classification: 'allow', first_seen: false, matched_rules: [] },
    hold: hold[0],
    reason: null,
    rule: 'Tool classified allow',
    status: 'auto_allowed',
    tool_name: 'read_balance',
  });
  const seq = Number(head.seq) + 1;
  const occurredAt = new Date(now).toISOString();
  const hash = createHash('sha256').update(`${head.hash}${seq}${occurredAt}${data}`).digest('hex');
  return [
    [workspace, seq, head.hash, 'hold.submitted', occurredAt, data, hash],
    [workspace, seq, hash, occurredAt, 'bench-floor-key', randomBytes(64).toString('base64')],
  ];
}

/** `count` workspaces with a chain head each, inserted directly: two statements. */
async function seedWorkspaces(exec: (text: string) => Promise<unknown>, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `org_floor_${String(i).padStart(4, '0')}`);
  const now = Date.now();
  await exec(
    `INSERT INTO workspaces (id, slug, name, plan, created_at) VALUES ${ids
      .map((id) => `('${id}', '${id}', 'Floor', 'standard', ${now})`)
      .join(', ')}`,
  );
  await exec(
    `INSERT INTO evidence_heads (workspace_id, seq, hash) VALUES ${ids
      .map((id) => `('${id}', 0, '${'0'.repeat(64)}')`)
      .join(', ')}`,
  );
  return ids;
}

/**
 * A fresh PostgreSQL schema at TEST_DATABASE_URL, migrated by the service's migrations, with
 * `workspaces` workspaces; dropped by `close`.
 */
export async function openPostgresFloor(workspaces: number): Promise<{ db: FloorDb; workspaces: string[] }> {
  const storage = await postgres.create();
  const url = storage.env.DATABASE_URL!;
  let pool: pg.Pool | undefined;
  try {
    await (await openDb({ databaseUrl: url, dataDir: storage.env.DATA_DIR })).close();
    // The service's pool: 10 connections, the same timeout (src/store/postgres.ts).
    pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 5000 });
    pool.on('error', () => {});
    const opened = pool;
    const names = new Map<string, string>();
    // Prepared once per connection under a name, as the service does with statements that have parameters.
    const prepared = (text: string, values: unknown[]) => {
      let name = names.get(text);
      if (!name) names.set(text, (name = `f${names.size}`));
      return { name, text, values };
    };
    const ids = await seedWorkspaces((text) => opened.query(text), workspaces);
    // The service's writeTogether: the three writes as one statement of data-modifying CTEs.
    const shift = (text: string, by: number) =>
      text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);
    const writes = `WITH w0 AS (${INSERT_HOLD}), w1 AS (${shift(INSERT_ENTRY, 27)}), w2 AS (${shift(UPDATE_HEAD, 34)}) SELECT 1`;
    const db: FloorDb = {
      async submission(workspace) {
        const client = await opened.connect();
        try {
          await client.query('BEGIN');
          const head = (await client.query<{ seq: number; hash: string }>(prepared(LOCK_HEAD, [workspace])))
            .rows[0]!;
          const now = Date.now();
          const hold = holdParams(workspace, now);
          const [entry, moved] = entryParams(workspace, head, hold, now);
          await client.query(prepared(writes, [...hold, ...entry!, ...moved!]));
          await client.query('COMMIT');
          client.release();
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          client.release(true);
          throw error;
        }
      },
      async insertOnly(workspace) {
        // One statement, committed on its own: the cheapest durable write of one hold row.
        await opened.query(prepared(INSERT_HOLD, holdParams(workspace, Date.now())));
      },
      countHolds: async () =>
        Number((await opened.query<{ n: string }>('SELECT COUNT(*) AS n FROM holds')).rows[0]!.n),
      async close() {
        await opened.end();
        await storage.drop();
      },
    };
    return { db, workspaces: ids };
  } catch (error) {
    await pool?.end();
    await storage.drop();
    throw error;
  }
}

/**
 * A fresh SQLite file migrated by the service's migrations, opened with the service's own adapter
 * (src/store/sqlite.ts): its settings, its group commit and its sync of the log off the event loop.
 */
export async function openSqliteFloor(workspaces: number): Promise<{ db: FloorDb; workspaces: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-floor-'));
  try {
    const sqlite = await openDb({ dataDir: dir });
    const ids = await seedWorkspaces((text) => sqlite.exec(text), workspaces);
    const db: FloorDb = {
      submission: (workspace) =>
        sqlite.transaction(async (tx) => {
          const head = (await tx.one<{ seq: number; hash: string }>(LOCK_HEAD, [workspace]))!;
          const now = Date.now();
          const hold = holdParams(workspace, now);
          const [entry, moved] = entryParams(workspace, head, hold, now);
          await tx.run(INSERT_HOLD, hold);
          await tx.run(INSERT_ENTRY, entry);
          await tx.run(UPDATE_HEAD, moved);
        }),
      async insertOnly(workspace) {
        await sqlite.transaction((tx) => tx.run(INSERT_HOLD, holdParams(workspace, Date.now())));
      },
      countHolds: async () => Number((await sqlite.one<{ n: number }>('SELECT COUNT(*) AS n FROM holds'))!.n),
      async close() {
        await sqlite.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
    return { db, workspaces: ids };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Picks workspaces in turn from a random start, as the load generator picks its keys. */
function rotation(workspaces: string[]) {
  let next = Math.floor(Math.random() * workspaces.length);
  return () => workspaces[next++ % workspaces.length]!;
}

/** Throws unless the database gained exactly the holds committed: the floor is held to durability too. */
async function checkStored(db: FloorDb, before: number, committed: number, label: string) {
  const stored = (await db.countHolds()) - before;
  if (stored !== committed) throw new Error(`bench: ${label}: ${committed} committed, ${stored} stored`);
}

/**
 * `connections` transactions at a time, each starting the next as soon as it commits, for `seconds`
 * after `warmupSeconds` of the same (not counted).
 */
export async function closedFloor(
  db: FloorDb,
  workspaces: string[],
  kind: 'submission' | 'insertOnly',
  options: { connections: number; seconds: number; warmupSeconds: number; label: string },
): Promise<FloorRun> {
  const pick = rotation(workspaces);
  const before = await db.countHolds();
  const cpuBefore = cpuMicros(process.pid);
  let committed = 0;
  let counted = 0;
  const warmEnd = performance.now() + options.warmupSeconds * 1000;
  const end = warmEnd + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (performance.now() < end) {
        await db[kind](pick());
        committed += 1;
        if (performance.now() >= warmEnd) counted += 1;
      }
    }),
  );
  const seconds = (performance.now() - warmEnd) / 1000;
  const cpuPerTx = (cpuMicros(process.pid) - cpuBefore) / committed;
  await checkStored(db, before, committed, options.label);
  return { committed: counted, perSecond: counted / seconds, cpuPerTx };
}

/** Submission-shaped transactions at a fixed `rate`, evenly spaced (`paced`): p50 and p99 in ms. */
export async function pacedFloor(
  db: FloorDb,
  workspaces: string[],
  options: { rate: number; seconds: number; label: string },
): Promise<PacedRun> {
  const pick = rotation(workspaces);
  const before = await db.countHolds();
  const { latencies, failed } = await paced(options.rate, options.seconds, () => db.submission(pick()));
  if (failed > 0) throw new Error(`bench: ${options.label}: ${failed} transactions failed`);
  await checkStored(db, before, latencies.length, options.label);
  const sorted = latencies.sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
  return { p50: rank(50), p99: rank(99), committed: latencies.length };
}
