/**
 * Verifying a workspace's evidence chain of 100,000 entries, in entries per second, beside its floor:
 * SHA-256 (node:crypto, `createHash('sha256').update(…).digest('hex')`, one entry at a time) over the
 * exact bytes each entry's hash covers — `entryHashInput(entry)`, the RFC 8785 canonical JSON of
 * `{ seq, prev_hash, orgId, type, occurred_at, data }` — already in memory.
 * - the server's `verifyChain` (what `GET /api/v1/audit/verify` and the app's Evidence page call), on
 *   SQLite, and on PostgreSQL when TEST_DATABASE_URL is set. Reading the rows from the database (pages
 *   of up to 1,000, fewer when entries are large; each row's `data` is hashed as its stored canonical
 *   text) is part of that verification and is in the figure. Beside it, to show where the time goes: the same SELECT alone, the same reads
 *   as `listEntries` gives them (records) and as verifyChain reads them (`chainRows`: arrays), no hashing,
 *   and the canonical JSON of parsed entries alone.
 * - the SDK's offline `verifyEvidenceExport` over the export of the SQLite chain (as
 *   `approvals evidence export` writes it), read from a file as a stream, signature checked; beside
 *   SHA-256 through WebCrypto one awaited digest at a time, as the SDK hashes.
 * The chain starts with entries written by the real services (a workspace, a config with rules, holds
 * submitted and decided); the rest repeat those entries' types and data with new hold references,
 * appended with the service's own chain (hash, link, signed checkpoint): first `openChain(…).append`
 * one entry at a time, then `lockChain`'s entries kept in memory and written many per statement (the
 * store's own statements), so seeding takes seconds. How fast each way seeds is in the notes.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type EvidenceEntry, entryHashInput } from '../packages/sdk/src/chain.ts';
import { type AuditKey, verifyEvidenceExport } from '../packages/sdk/src/evidence.ts';
import { loadConfig } from '../src/config.ts';
import { newHoldReference } from '../src/domain/ids.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceContext } from '../src/services/context.ts';
import { decideHold } from '../src/services/decide-hold.ts';
import { lockChain, openChain } from '../src/services/evidence.ts';
import { exportEvidence } from '../src/services/export-evidence.ts';
import { submitHold } from '../src/services/submit-hold.ts';
import { sha256Hex as serverSha256Hex } from '../src/services/hashing.ts';
import { verifyChain } from '../src/services/verify-chain.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { writeTogether } from '../src/store/statements.ts';
import { chainRows, findChainHead, listEntries } from '../src/store/evidence.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends, type Storage } from '../test/support/backends.ts';
import { compared, type Figure, percentile } from './lib.ts';

/** CHAIN_BENCH_ENTRIES: fewer while iterating on a change; the figures reported are of 100,000. */
const ENTRIES = Number(process.env.CHAIN_BENCH_ENTRIES ?? 100_000);
/** Submissions through `submitHold` (and decisions through `decideHold`) at the start of the chain. */
const SUBMISSIONS = 300;
/** Entries appended one statement at a time with `openChain(…).append`, as the services do. */
const PLAIN_APPENDS = 3_000;
/** Entries per seeding transaction. */
const BATCH = 1_000;
/** listEntries' page in the floors; verifyChain's (32 at first, then up to 1,000 entries of 4 MiB in all). */
const PAGE = 1_000;
const RUNS = 3;

/** The worked example of docs/rules.md: approvals, two-approver rules, denials, conditions, a frequency. */
const CONFIG = {
  name: 'Chain bench',
  members: [
    { email: 'alice@bench.test', name: 'Alice', role: 'admin' },
    { email: 'bob@bench.test', name: 'Bob', role: 'approver' },
    { email: 'carol@bench.test', name: 'Carol', role: 'approver' },
    { email: 'dave@bench.test', name: 'Dave', role: 'viewer' },
  ],
  groups: { finance: ['alice@bench.test', 'bob@bench.test'] },
  tools: [
    { connection: 'SDK', tool: 'invoices.read', classification: 'allow' },
    { connection: 'SDK', tool: 'invoices.send', classification: 'allow' },
    { connection: 'SDK', tool: 'payments.send', classification: 'approval' },
    { connection: 'SDK', tool: 'db.query', classification: 'allow' },
    { connection: 'SDK', tool: 'customers.delete', classification: 'deny' },
  ],
  rules: [
    {
      name: 'Payments go to finance',
      tool: 'payments.send',
      effect: 'approval',
      approvers: ['group:finance'],
    },
    {
      name: 'Large payments need two approvers',
      tool: 'payments.send',
      when: [{ arg: 'amount', op: 'gt', value: 1000 }],
      effect: 'approval',
      approvers: ['group:finance', 'carol@bench.test'],
      approvals_required: 2,
      timeout_minutes: 60,
    },
    {
      name: 'No payments to sanctioned countries',
      tool: 'payments.*',
      when: [{ arg: 'beneficiary.country', op: 'in', value: ['KP', 'IR', 'SY'] }],
      effect: 'deny',
      reason: 'Payments to this country are not allowed',
    },
    { name: 'Test agents never pay', tool: 'payments.*', agent: 'test-*', effect: 'deny' },
    {
      name: 'Invoice bursts',
      connection: 'SDK',
      tool: 'invoices.send',
      frequency: { more_than: 20, per: 'hour', by: 'tool' },
      effect: 'approval',
      approvers: ['role:approver'],
      timeout_minutes: 30,
    },
    {
      name: 'No table drops',
      tool: 'db.query',
      when: [{ arg: 'sql', op: 'matches', value: '(?i)\\bdrop\\s+table\\b' }],
      effect: 'deny',
    },
  ],
};

const COUNTRIES = ['FR', 'DE', 'NL', 'IR', 'ES', 'IT'];

/** The i-th call of the real-service prefix: a mix of tools, agents, amounts and countries. */
function submission(i: number) {
  const kind = i % 6;
  const agent = { id: i % 17 === 0 ? 'test-bot' : 'billing-bot', label: 'Billing bot' };
  const context = { run: `run-${i % 40}`, ticket: `T-${1000 + i}` };
  const call = (toolName: string, args: Record<string, unknown>) => ({
    connection: 'SDK',
    toolName,
    arguments: args,
    agent,
    context,
    idempotencyKey: `chain-bench-${i}`,
  });
  if (kind === 0 || kind === 1)
    return call('payments.send', {
      amount: kind === 0 ? 120 + i : 1500 + i,
      currency: 'EUR',
      beneficiary: {
        name: `Supplier ${i % 50}`,
        iban: `FR76300060000112345678${String(i).padStart(4, '0')}`,
        country: COUNTRIES[i % COUNTRIES.length],
      },
      memo: `Invoice INV-${20_000 + i}`,
    });
  if (kind === 2)
    return call('invoices.send', { invoice: `INV-${20_000 + i}`, to: `customer${i % 90}@example.test` });
  if (kind === 3) return call('invoices.read', { invoice: `INV-${20_000 + i}` });
  if (kind === 4)
    return call('db.query', {
      sql: i % 12 === 4 ? 'DROP TABLE invoices' : `SELECT * FROM invoices WHERE id = ${i}`,
    });
  return call(i % 30 === 5 ? `reports.export_${i % 7}` : 'customers.delete', { customer: `cus_${i}` });
}

/** Through the services, as agents and approvers would: every entry these write is a real one. */
async function seedThroughServices(ctx: ServiceContext, workspace: Workspace): Promise<number> {
  const caller = {
    workspace,
    environment: 'live' as const,
    requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
  };
  const deciders = await Promise.all(
    ['bob@bench.test', 'carol@bench.test', 'alice@bench.test'].map(
      async (email) => (await findMemberByEmail(ctx.db, workspace.id, email))!.id,
    ),
  );
  for (let i = 0; i < SUBMISSIONS; i++) {
    const { hold } = await submitHold(ctx, caller, submission(i));
    if (hold.status !== 'pending' || i % 10 === 9) continue; // some stay pending
    // Each approver in turn until the hold is decided (one who may not approve it changes nothing).
    for (const memberId of deciders) {
      const verdict = i % 7 === 3 ? 'reject' : 'approve';
      const decided = await decideHold(ctx, {
        workspaceId: workspace.id,
        holdId: hold.id,
        memberId,
        verdict,
        comment: verdict === 'reject' ? 'Not this month' : null,
        channel: 'inbox',
      });
      if (decided.hold.status !== 'pending') break;
    }
  }
  return (await findChainHead(ctx.db, workspace.id))!.seq;
}

/** Entries of the same types and data as `templates`, each with a hold reference of its own. */
function nextData(templates: EvidenceEntry[], n: number): { type: string; data: Record<string, unknown> } {
  const template = templates[n % templates.length]!;
  const data = { ...(template.data as Record<string, unknown>) };
  if (typeof data.hold === 'string') data.hold = newHoldReference();
  return { type: template.type, data };
}

/** A chain of ENTRIES entries in a new workspace; the seeding rates for the notes. */
async function seed(ctx: ServiceContext) {
  const workspace = await createWorkspace(ctx, { slug: 'chain-bench', name: 'Chain bench' });
  await applyConfig(ctx, workspace, parseConfig(JSON.stringify(CONFIG)));
  await createApiKey(ctx, { workspace, env: 'live' });
  let start = performance.now();
  const before = (await findChainHead(ctx.db, workspace.id))!.seq;
  let seq = await seedThroughServices(ctx, workspace);
  const servicesRate = (seq - before) / ((performance.now() - start) / 1000);

  const templates = (await listEntries(ctx.db, workspace.id, workspace.id, before + 1, seq, seq))
    .filter((e) => e.type.startsWith('hold.'))
    .map((e) => ({ ...e, data: JSON.parse(e.data) as unknown }));
  if (templates.length === 0) throw new Error('bench: the services wrote no hold entries');
  let n = 0;

  // One statement at a time, as in the services' transactions.
  start = performance.now();
  const plainStart = seq;
  while (seq < plainStart + PLAIN_APPENDS) {
    const count = Math.min(BATCH, plainStart + PLAIN_APPENDS - seq);
    await ctx.db.transaction(async (tx) => {
      const chain = await openChain(tx, ctx, workspace.id);
      for (let i = 0; i < count; i++) {
        const { type, data } = nextData(templates, n++);
        await chain.append(type, data);
      }
    });
    seq += count;
  }
  const plainRate = PLAIN_APPENDS / ((performance.now() - start) / 1000);

  // The same appends kept in memory (`lockChain`, as a submission's), their rows written many per
  // statement with the head moved and signed once for them. SQLite binds numbered parameters in time
  // that grows with the square of their number, so its statements stay small.
  const rowsPerInsert = ctx.db.dialect === 'sqlite' ? 25 : 500;
  start = performance.now();
  const bufferedStart = seq;
  while (seq < ENTRIES) {
    const count = Math.min(BATCH, ENTRIES - seq);
    await ctx.db.transaction(async (tx) => {
      const chain = await lockChain(tx, ctx, workspace.id);
      for (let i = 0; i < count; i++) {
        const { type, data } = nextData(templates, n++);
        chain.append(type, data);
        if ((i + 1) % rowsPerInsert === 0 || i === count - 1)
          await writeTogether(tx, ctx.db.dialect, chain.writes());
      }
    });
    seq += count;
  }
  const bufferedRate = (ENTRIES - bufferedStart) / ((performance.now() - start) / 1000);
  if ((await findChainHead(ctx.db, workspace.id))!.seq !== ENTRIES)
    throw new Error('bench: wrong chain length');
  if (ctx.db.dialect === 'postgres') await ctx.db.exec('ANALYZE evidence');
  return {
    workspaceId: workspace.id,
    note: `chain seeded: ${plainStart} entries through the services (workspace, config, key, then ${SUBMISSIONS} holds submitted and decided: ${Math.round(servicesRate)} entries/s through submitHold/decideHold), ${PLAIN_APPENDS} with openChain().append one statement at a time (${Math.round(plainRate)} entries/s), the rest with lockChain, ${rowsPerInsert} rows per statement (${Math.round(bufferedRate)} entries/s)`,
  };
}

/**
 * The works named in `names` once per round, in turn, RUNS rounds (after a warm-up round of those not
 * in `cold`), so a neighbour's load falls on all of them alike; the median entries per second of each
 * (NaN for a work not named), of wall-clock time and of this process's CPU time (every thread's).
 */
async function rounds<K extends string>(
  works: Record<K, () => unknown>,
  names: readonly K[],
  cold: readonly K[] = [],
): Promise<{ wall: Record<K, number>; cpu: Record<K, number> }> {
  const once = async (name: K) => {
    const start = performance.now();
    const cpu = process.cpuUsage();
    const result = works[name]();
    if (result instanceof Promise) await result;
    const { user, system } = process.cpuUsage(cpu);
    return [ENTRIES / ((performance.now() - start) / 1000), ENTRIES / ((user + system) / 1e6)] as const;
  };
  for (const name of names) if (!cold.includes(name)) await once(name);
  const wall = new Map<K, number[]>(names.map((name) => [name, []]));
  const cpu = new Map<K, number[]>(names.map((name) => [name, []]));
  for (let i = 0; i < RUNS; i++)
    for (const name of names) {
      const [perSecond, perCpuSecond] = await once(name);
      wall.get(name)!.push(perSecond);
      cpu.get(name)!.push(perCpuSecond);
    }
  const medians = (rates: Map<K, number[]>) =>
    Object.fromEntries(
      (Object.keys(works) as K[]).map((name) => [
        name,
        rates.has(name) ? percentile(rates.get(name)!, 50) : Number.NaN,
      ]),
    ) as Record<K, number>;
  return { wall: medians(wall), cpu: medians(cpu) };
}

/** Every entry of the chain, read once, for the in-memory figures. */
async function allEntries(ctx: ServiceContext, workspaceId: string): Promise<EvidenceEntry[]> {
  const entries: EvidenceEntry[] = [];
  for (let next = 1; ;) {
    const page = await listEntries(ctx.db, workspaceId, workspaceId, next, ENTRIES, PAGE);
    entries.push(...page.map((e) => ({ ...e, data: JSON.parse(e.data) as unknown })));
    if (page.length < PAGE) break;
    next = page[page.length - 1]!.seq + 1;
  }
  if (entries.length !== ENTRIES) throw new Error(`bench: ${entries.length} entries read back`);
  return entries;
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** The export as `approvals evidence export` writes it, and the keys an auditor would fetch. */
async function exportFile(ctx: ServiceContext, workspaceId: string, dir: string) {
  const file = join(dir, 'evidence.jsonl');
  const start = performance.now();
  await pipeline(Readable.from(exportEvidence(ctx, workspaceId)), createWriteStream(file));
  const seconds = (performance.now() - start) / 1000;
  const keys: AuditKey[] = (await ctx.signer.published()).map((key) => ({
    key_id: key.key_id,
    jwk: { kty: String(key.jwk.kty), crv: String(key.jwk.crv), x: String(key.jwk.x) },
  }));
  return { file, seconds, keys };
}

async function onBackend(name: string, storage: Storage): Promise<Figure[]> {
  const settings = { ...storage.env, DATABASE_URL: storage.env.DATABASE_URL ?? '', PUBLIC_URL: '' };
  const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
  try {
    const { workspaceId, note: seeded } = await seed(ctx);
    const entries = await allEntries(ctx, workspaceId);
    const inputs = entries.map(entryHashInput);
    // The floor's bytes really are the ones the chain's hashes cover.
    inputs.forEach((input, i) => {
      if (sha256Hex(input) !== entries[i]!.hash)
        throw new Error(`bench: entry ${i + 1} does not hash to its hash`);
    });
    const bytes = inputs.reduce((sum, input) => sum + Buffer.byteLength(input), 0) / ENTRIES;

    let sink = 0; // used after the rounds, so no loop can be optimized away
    const works = {
      /** The floor: SHA-256 alone over the exact bytes, already in memory. */
      sha: () => {
        for (const input of inputs) sink += sha256Hex(input).charCodeAt(0);
      },
      /** SHA-256 as the server hashes (one call of crypto.hash, no Hash object), alone. */
      serverSha: () => {
        for (const input of inputs) sink += serverSha256Hex(input).charCodeAt(0);
      },
      /** The serialization before each hash, alone. */
      canonical: () => {
        for (const entry of entries) sink += entryHashInput(entry).length;
      },
      /** listEntries' own SELECT, rows as the driver gives them: no JSON.parse, no hashing. */
      select: async () => {
        let rows = 0;
        for (let next = 1; ;) {
          const page = await ctx.db.all<{ seq: number }>(
            `SELECT seq, prev_hash, type, occurred_at, data, hash FROM evidence
     WHERE workspace_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
            [workspaceId, next, Number.MAX_SAFE_INTEGER, PAGE],
          );
          rows += page.length;
          if (page.length < PAGE) break;
          next = Number(page[page.length - 1]!.seq) + 1;
        }
        if (rows !== ENTRIES) throw new Error(`bench: read ${rows} rows`);
      },
      /** listEntries pages alone: the records verifyChain read until issue 43's second pass. */
      read: async () => {
        let read = 0;
        for (let next = 1; ;) {
          const page = await listEntries(
            ctx.db,
            workspaceId,
            workspaceId,
            next,
            Number.MAX_SAFE_INTEGER,
            PAGE,
          );
          read += page.length;
          if (page.length < PAGE) break;
          next = page[page.length - 1]!.seq + 1;
        }
        if (read !== ENTRIES) throw new Error(`bench: read ${read} entries`);
      },
      /** verifyChain's reads with the hashing taken out: chainRows pages alone (values in arrays). */
      rows: async () => {
        let read = 0;
        for (let next = 1; ;) {
          const page = await chainRows(ctx.db, workspaceId, next, Number.MAX_SAFE_INTEGER, PAGE);
          read += page.length;
          if (page.length < PAGE) break;
          next = Number(page[page.length - 1]![0]) + 1;
        }
        if (read !== ENTRIES) throw new Error(`bench: read ${read} entries`);
      },
      /**
       * The server's verification, reads from the database included: the whole walk each run (a range
       * to the end; a check of the whole chain would go on from where the previous run ended).
       */
      verify: async () => {
        const result = await verifyChain(ctx, workspaceId, { fromSeq: 1, toSeq: Number.MAX_SAFE_INTEGER });
        if (!result.valid || result.checked !== ENTRIES) {
          throw new Error(`bench: verifyChain found the chain invalid: ${JSON.stringify(result)}`);
        }
      },
    };

    // The SDK is offline, whatever the backend: its figures are measured once, on the SQLite chain.
    const offline = name === 'sqlite' ? await exportFile(ctx, workspaceId, storage.env.DATA_DIR) : undefined;
    const subtle = globalThis.crypto.subtle;
    const encoder = new TextEncoder();
    const sdkWorks = {
      /** How the SDK hashes, alone: encode, one awaited WebCrypto digest per entry, hex. */
      webCrypto: async () => {
        for (const input of inputs) {
          const digest = new Uint8Array(await subtle.digest('SHA-256', encoder.encode(input)));
          let hex = '';
          for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
          sink += hex.charCodeAt(0);
        }
      },
      /** The SDK's offline check of the export file, read as a stream, signature checked. */
      sdk: async () => {
        if (!offline) throw new Error('bench: no export to verify');
        const result = await verifyEvidenceExport(createReadStream(offline.file), { keys: offline.keys });
        if (!result.valid || result.signature !== 'valid' || result.checked !== ENTRIES) {
          throw new Error(`bench: verifyEvidenceExport found the export invalid: ${JSON.stringify(result)}`);
        }
      },
    };
    const all = { ...works, ...sdkWorks };
    const server = ['sha', 'serverSha', 'canonical', 'select', 'read', 'rows', 'verify'] as const;
    // The SDK's take seconds each: a warm-up round of them would add as much again, and 100,000
    // entries are warm-up enough for the JIT.
    const { wall: rates, cpu: cpuRates } = await rounds<keyof typeof all>(
      all,
      offline ? [...server, 'webCrypto', 'sdk'] : server,
      ['webCrypto', 'sdk'],
    );
    if (sink < 0) throw new Error('unreachable');

    const micros = (rate: number) => (1e6 / rate).toFixed(1);
    const floor: Figure = {
      bench: 'chain',
      figure: `floor: SHA-256 (node:crypto) of the bytes each hash covers, in memory, ${name} chain`,
      value: rates.sha,
      unit: 'entries/s',
      note: `createHash('sha256').update(entryHashInput(entry)).digest('hex') over the ${ENTRIES} canonical JSON strings, made beforehand (${Math.round(bytes)} bytes each on average, ${((rates.sha * bytes) / 1e6).toFixed(0)} MB/s). Every figure is the median of ${RUNS} rounds, each work once per round in turn. ${seeded}`,
    };
    const figure = (label: string, value: number, note: string): Figure =>
      compared({ bench: 'chain', figure: label, value, unit: 'entries/s', note }, floor);
    const figures = [
      floor,
      figure(
        `SHA-256 in one call (crypto.hash, as the server hashes), in memory, ${name} chain`,
        rates.serverSha,
        "the floor's strings hashed with src/services/hashing.ts: the same bytes and digests without a Hash object per entry",
      ),
      figure(
        `canonical JSON alone (entryHashInput of parsed entries), in memory, ${name} chain`,
        rates.canonical,
        'the serialization before each hash in the SDK (the server hashes the stored canonical text as it is)',
      ),
      figure(
        `SELECT the rows in pages of ${PAGE}, nothing else, ${name}`,
        rates.select,
        "listEntries' SELECT through ctx.db.all, as many pages as verification reads; no JSON.parse, no hashing",
      ),
      figure(
        `read as verifyChain does, no hashing (listEntries in pages of ${PAGE}), ${name}`,
        rates.read,
        "listEntries' records (each row decoded into an object): what verifyChain read before it read arrays",
      ),
      figure(
        `read as verifyChain does now, no hashing (chainRows in pages of ${PAGE}), ${name}`,
        rates.rows,
        `second floor: verifyChain's reads with the SHA-256 taken out (the values in arrays: SQLite's row objects are dictionaries, slow to read; on PostgreSQL the driver's records, copied into arrays)`,
      ),
      figure(
        `verifyChain (GET /api/v1/audit/verify) of ${ENTRIES} entries, ${name}`,
        rates.verify,
        `the whole chain read from the database (warm: just written), which is part of verification (${(rates.rows / rates.verify).toFixed(1)}× slower than the reads alone; the next page is asked for before this one is hashed). Per entry, µs: reads as verifyChain's ${micros(rates.rows)} + SHA-256 in one call ${micros(rates.serverSha)} = ${(1e6 / rates.rows + 1e6 / rates.serverSha).toFixed(1)} measured apart, plus the hash input put together; ${micros(rates.verify)} measured whole. Issue 43's goal, at least 0.5 of the floor: ${rates.verify >= rates.sha / 2 ? 'met' : 'NOT MET'} (${(rates.verify / rates.sha).toFixed(2)}; against SHA-256 in one call ${(rates.verify / rates.serverSha).toFixed(2)})`,
      ),
    ];
    // The same two in CPU time, which a neighbour taking the cores does not stretch.
    const cpuFloor: Figure = {
      ...floor,
      figure: `floor: SHA-256 (node:crypto) of the bytes each hash covers, in memory, per second of CPU, ${name} chain`,
      value: cpuRates.sha,
      note: `the floor's hashes, counted in this process's CPU time (process.cpuUsage, user + system) instead of wall-clock time: ${micros(cpuRates.sha)} µs of CPU per entry`,
    };
    figures.push(
      cpuFloor,
      compared(
        {
          bench: 'chain',
          figure: `verifyChain of ${ENTRIES} entries, per second of CPU, ${name}`,
          value: cpuRates.verify,
          unit: 'entries/s',
          note: `the verifyChain figure's runs, counted in this process's CPU time: ${micros(cpuRates.verify)} µs per entry${name === 'postgres' ? " (PostgreSQL's own, in its processes, not counted)" : ''}. Issue 43's goal, at least 0.5 of the floor, in CPU: ${cpuRates.verify >= cpuRates.sha / 2 ? 'met' : 'NOT MET'} (${(cpuRates.verify / cpuRates.sha).toFixed(2)})`,
        },
        cpuFloor,
      ),
    );
    if (offline) {
      figures.push(
        figure(
          'SHA-256 through WebCrypto as the SDK hashes (encode, await subtle.digest, hex), in memory',
          rates.webCrypto,
          'the same strings as the floor, one awaited digest per entry as verifyEvidenceExport makes them, back to back with nothing between (each digest is a job on the libuv thread pool)',
        ),
        figure(
          `verifyEvidenceExport (SDK, offline) of the ${ENTRIES}-entry export file`,
          rates.sdk,
          `the SQLite chain's export (exportEvidence wrote it in ${offline.seconds.toFixed(1)} s) read with createReadStream: every line parsed, serialized, hashed; the checkpoint's signature checked. ${micros(rates.sdk)} µs per entry; the canonical JSON takes ${micros(rates.canonical)} of it, and the same digests awaited back to back alone ${micros(rates.webCrypto)}`,
        ),
      );
    }
    return figures;
  } finally {
    await ctx.db.close();
  }
}

export async function run(): Promise<{ figures: Figure[]; skipped: { figure: string; reason: string }[] }> {
  const figures: Figure[] = [];
  const skipped: { figure: string; reason: string }[] = [];
  for (const backend of backends) {
    if (backend.skip) {
      skipped.push({ figure: `verifyChain on ${backend.name}`, reason: backend.skip });
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
