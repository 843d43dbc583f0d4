import type { Checkpoint, EvidenceEntry, InvalidReason } from '../../packages/sdk/src/chain.ts';
import { columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';
import type { Statement } from './statements.ts';

/** Every column of `evidence_heads`: a workspace's chain head, signed, and its freeze. */
const heads = columns({
  workspaceId: text('workspace_id'),
  seq: integer('seq'),
  hash: text('hash'),
  signedAt: nullable(text('signed_at')),
  keyId: nullable(text('key_id')),
  signature: nullable(text('signature')),
  frozenAt: nullable(integer('frozen_at')),
  frozenSeq: nullable(integer('frozen_seq')),
  frozenReason: nullable(text('frozen_reason')),
});

const headColumns = heads.pick('seq', 'hash', 'signedAt', 'keyId', 'signature');

export type ChainHead = RecordOf<typeof headColumns.fields>;

const toHead = (row: Row | undefined) => (row ? headColumns.decode(row) : undefined);

export async function insertChainHead(sql: Sql, workspaceId: string, genesisHash: string): Promise<void> {
  const head = heads.pick('workspaceId', 'seq', 'hash').insert({ workspaceId, seq: 0, hash: genesisHash });
  await sql.run(`INSERT INTO evidence_heads (${head.columns}) VALUES ${head.values}`, head.params);
}

/** Locks the head (PostgreSQL), so appends to one workspace's chain happen one at a time. */
export const lockChainHead = async (sql: Sql, workspaceId: string) =>
  toHead(
    await sql.one(`SELECT ${headColumns.select()} FROM evidence_heads WHERE workspace_id = $1 FOR UPDATE`, [
      workspaceId,
    ]),
  );

export const findChainHead = async (sql: Sql, workspaceId: string) =>
  toHead(
    await sql.one(`SELECT ${headColumns.select()} FROM evidence_heads WHERE workspace_id = $1`, [
      workspaceId,
    ]),
  );

/** What the signer checks of a head before it extends the chain (services/chain-guard.ts), in one read. */
export interface HeadUnderCheck extends ChainHead {
  frozenSeq: number | null;
  frozenReason: string | null;
  /** The highest entry stored, whatever the head says. */
  lastSeq: number | null;
  lastHash: string | null;
  published: { seq: number; hash: string; signedAt: string } | null;
}

/** The head with its freeze, the newest entry and the newest published checkpoint (computed). */
const headChecked = columns({
  ...headColumns.fields,
  ...heads.pick('frozenSeq', 'frozenReason').fields,
  lastSeq: nullable(integer('lastSeq')),
  lastHash: nullable(text('lastHash')),
  publishedSeq: nullable(integer('publishedSeq')),
  publishedHash: nullable(text('publishedHash')),
  publishedAt: nullable(text('publishedAt')),
});

export async function headUnderCheck(sql: Sql, workspaceId: string): Promise<HeadUnderCheck | undefined> {
  const row = await sql.one(
    `SELECT ${headColumns.select()}, ${heads.pick('frozenSeq', 'frozenReason').select()},
       (SELECT e.seq FROM evidence e WHERE e.workspace_id = $1 ORDER BY e.seq DESC LIMIT 1) AS "lastSeq",
       (SELECT e.hash FROM evidence e WHERE e.workspace_id = $1 ORDER BY e.seq DESC LIMIT 1) AS "lastHash",
       (SELECT c.seq FROM evidence_checkpoints c WHERE c.workspace_id = $1 ORDER BY c.seq DESC LIMIT 1) AS "publishedSeq",
       (SELECT c.hash FROM evidence_checkpoints c WHERE c.workspace_id = $1 ORDER BY c.seq DESC LIMIT 1) AS "publishedHash",
       (SELECT c.signed_at FROM evidence_checkpoints c WHERE c.workspace_id = $1 ORDER BY c.seq DESC LIMIT 1) AS "publishedAt"
     FROM evidence_heads WHERE workspace_id = $1`,
    [workspaceId],
  );
  if (!row) return undefined;
  const { publishedSeq, publishedHash, publishedAt, ...head } = headChecked.decode(row);
  return {
    ...head,
    published:
      publishedSeq === null ? null : { seq: publishedSeq, hash: publishedHash!, signedAt: publishedAt! },
  };
}

/** Every column of `evidence`: a workspace's chain of entries, named as the SDK names an entry's. */
const evidence = columns({
  workspaceId: text('workspace_id'),
  seq: integer('seq'),
  prev_hash: text('prev_hash'),
  type: text('type'),
  occurred_at: text('occurred_at'),
  /** Canonical JSON text, exactly what the hash covers: kept as text. */
  data: text('data'),
  hash: text('hash'),
});

const entryColumns = evidence.omit('workspaceId');

/** The hash stored for entry `seq` (undefined: none). */
export async function entryHashAt(sql: Sql, workspaceId: string, seq: number) {
  const hash = evidence.pick('hash');
  const row = await sql.one(`SELECT ${hash.select()} FROM evidence WHERE workspace_id = $1 AND seq = $2`, [
    workspaceId,
    seq,
  ]);
  return row && hash.decode(row).hash;
}

/** The newest entry of a type at or before `seq`, with when it was appended. */
export async function newestEntryOfType(sql: Sql, workspaceId: string, type: string, atOrBefore: number) {
  const entry = evidence.pick('seq', 'occurred_at');
  const row = await sql.one(
    `SELECT ${entry.select()} FROM evidence WHERE workspace_id = $1 AND type = $2 AND seq <= $3 ORDER BY seq DESC LIMIT 1`,
    [workspaceId, type, atOrBefore],
  );
  return row && entry.decode(row);
}

/** The break recorded when the chain was frozen, if it is. */
export async function recordedFreeze(sql: Sql, workspaceId: string) {
  const freeze = heads.pick('frozenSeq', 'frozenReason');
  const row = await sql.one(`SELECT ${freeze.select()} FROM evidence_heads WHERE workspace_id = $1`, [
    workspaceId,
  ]);
  const { frozenSeq, frozenReason } = row ? freeze.decode(row) : { frozenSeq: null, frozenReason: null };
  return frozenSeq === null
    ? null
    : { seq: frozenSeq, reason: (frozenReason ?? 'checkpoint_invalid') as InvalidReason };
}

/** Marks a chain frozen (for every instance); 0 when it was already. */
export const freezeChain = (sql: Sql, workspaceId: string, at: number, seq: number, reason: string) =>
  sql.run(
    'UPDATE evidence_heads SET frozen_at = $2, frozen_seq = $3, frozen_reason = $4 WHERE workspace_id = $1 AND frozen_at IS NULL',
    [workspaceId, at, seq, reason],
  );

export const unfreezeChain = (sql: Sql, workspaceId: string) =>
  sql.run(
    'UPDATE evidence_heads SET frozen_at = NULL, frozen_seq = NULL, frozen_reason = NULL WHERE workspace_id = $1',
    [workspaceId],
  );

/** The workspaces whose chain is frozen in the database, or among `also` (ids), with their slugs. */
const frozenChainRows = columns({ workspaceId: text('workspace_id'), slug: text('slug') });

export async function frozenChains(sql: Sql, also: string[]) {
  const listed = also.map((_, i) => `$${i + 1}`).join(', ');
  const rows = await sql.all(
    `SELECT h.workspace_id AS "workspaceId", w.slug FROM evidence_heads h JOIN workspaces w ON w.id = h.workspace_id
     WHERE h.frozen_at IS NOT NULL${listed ? ` OR h.workspace_id IN (${listed})` : ''} ORDER BY w.slug`,
    also,
  );
  return frozenChainRows.decodeAll(rows);
}

/** The signed head of a chain; null for a chain without entries. */
export function checkpointOf(head: ChainHead | undefined): Checkpoint | null {
  if (!head?.signature || !head.signedAt || !head.keyId) return null;
  return {
    seq: head.seq,
    hash: head.hash,
    signed_at: head.signedAt,
    key_id: head.keyId,
    signature: head.signature,
  };
}

/** Entries appended in order, and the chain's head moved to the last of them (with its signature). */
export function appendEntriesStatements(
  workspaceId: string,
  entries: readonly StoredEntry[],
  head: ChainHead,
): Statement[] {
  const inserted = evidence.insert(...entries.map((entry) => ({ ...entry, workspaceId })));
  const moved = headColumns.update(head, 2);
  return [
    { text: `INSERT INTO evidence (${inserted.columns}) VALUES ${inserted.values}`, params: inserted.params },
    {
      text: `UPDATE evidence_heads SET ${moved.set} WHERE workspace_id = $1`,
      params: [workspaceId, ...moved.params],
    },
  ];
}

/** An entry as stored: `data` is its canonical JSON text, exactly what the hash covers. */
export type StoredEntry = Omit<EvidenceEntry, 'data'> & { data: string };

/** Entries with `seq` in [from, to], in order, at most `limit`. */
export async function listEntries(
  sql: Sql,
  workspaceId: string,
  orgId: string,
  from: number,
  to: number,
  limit: number,
): Promise<StoredEntry[]> {
  const rows = await sql.all(
    `SELECT ${entryColumns.select()} FROM evidence
     WHERE workspace_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
    [workspaceId, from, to, limit],
  );
  return entryColumns.decodeAll(rows).map((row) => ({ ...row, orgId }));
}

/** An entry as `chainRows` reads it. `seq` as stored: a number, or whatever a database writer put there. */
export type ChainRow = [
  seq: unknown,
  prev_hash: string,
  type: string,
  occurred_at: string,
  data: string,
  hash: string,
];
const chainColumns = evidence.pick('seq', 'prev_hash', 'type', 'occurred_at', 'data', 'hash');

/**
 * `listEntries` for the chain's verification, which reads every entry (100,000 and more): the values
 * as the driver gives them, in arrays (no record made of each, and none read from SQLite's row objects).
 */
export async function chainRows(
  sql: Sql,
  workspaceId: string,
  from: number,
  to: number,
  limit: number,
): Promise<ChainRow[]> {
  const text = `SELECT ${chainColumns.select()} FROM evidence
     WHERE workspace_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4`;
  const params = [workspaceId, from, to, limit];
  if (sql.arrays) return (await sql.arrays(text, params)) as ChainRow[];
  const rows = await sql.all<Omit<StoredEntry, 'orgId'>>(text, params);
  return rows.map((row) => [row.seq, row.prev_hash, row.type, row.occurred_at, row.data, row.hash]);
}

/** The seq and type of up to `limit` entries from `from` on, without their data (which may be large). */
export async function entryTypesFrom(sql: Sql, workspaceId: string, from: number, limit: number) {
  const types = evidence.pick('seq', 'type');
  const rows = await sql.all(
    `SELECT ${types.select()} FROM evidence WHERE workspace_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
    [workspaceId, from, limit],
  );
  return types.decodeAll(rows);
}

/**
 * The entries at these seqs as stored, each with the `prev_hash` of the entry after it (null for the
 * last one): one read by primary key, for checking that they are what the chain holds.
 */
const entriesWithNext = columns({ ...entryColumns.fields, nextPrevHash: nullable(text('nextPrevHash')) });

export async function entriesAt(
  sql: Sql,
  workspaceId: string,
  seqs: readonly number[],
): Promise<(Omit<StoredEntry, 'orgId'> & { nextPrevHash: string | null })[]> {
  if (seqs.length === 0) return [];
  const listed = seqs.map((_, i) => `$${i + 2}`).join(', ');
  const rows = await sql.all(
    `SELECT ${entryColumns.select('e')},
       (SELECT n.prev_hash FROM evidence n WHERE n.workspace_id = e.workspace_id AND n.seq = e.seq + 1) AS "nextPrevHash"
     FROM evidence e WHERE e.workspace_id = $1 AND e.seq IN (${listed}) ORDER BY e.seq`,
    [workspaceId, ...seqs],
  );
  return entriesWithNext.decodeAll(rows);
}

/**
 * Entries of these types after `after` up to `upTo` whose data names the hold (the caller checks
 * `data.hold`): a range of the primary key, short where the hold's approval is recent.
 */
export async function holdEntriesBetween(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  range: { after: number; upTo: number },
  types: readonly string[],
) {
  const listed = types.map((_, i) => `$${i + 5}`).join(', ');
  const found = evidence.pick('seq', 'type', 'data');
  const rows = await sql.all(
    `SELECT ${found.select()} FROM evidence WHERE workspace_id = $1 AND seq > $2 AND seq <= $3
       AND data LIKE $4 AND type IN (${listed}) ORDER BY seq`,
    [workspaceId, range.after, range.upTo, `%"hold":"${holdId}"%`, ...types],
  );
  return found.decodeAll(rows);
}

/** The data of the entry `seq`, as stored (JSON text). */
export async function entryDataAt(sql: Sql, workspaceId: string, seq: number) {
  const data = evidence.pick('data');
  const row = await sql.one(`SELECT ${data.select()} FROM evidence WHERE workspace_id = $1 AND seq = $2`, [
    workspaceId,
    seq,
  ]);
  return row && data.decode(row).data;
}

/** When the entry `seq` was appended (ISO text, which sorts as time does); undefined for none. */
export async function entryTimeAt(sql: Sql, workspaceId: string, seq: number): Promise<string | undefined> {
  const time = evidence.pick('occurred_at');
  const row = await sql.one(`SELECT ${time.select()} FROM evidence WHERE workspace_id = $1 AND seq = $2`, [
    workspaceId,
    seq,
  ]);
  return row && time.decode(row).occurred_at;
}

const highest = columns({ seq: nullable(integer('seq')) });

/** The highest seq stored, whatever the head says (0 for none). */
export async function lastEntrySeq(sql: Sql, workspaceId: string): Promise<number> {
  const row = await sql.one('SELECT max(seq) AS seq FROM evidence WHERE workspace_id = $1', [workspaceId]);
  return (row && highest.decode(row).seq) ?? 0;
}

/** A checkpoint published outside the database (the checkpoints API, the evidence.checkpoint event). */
export type PublishedCheckpoint = Checkpoint & { published_at: number };

/** Every column of `evidence_checkpoints`, named as the API names a checkpoint's. */
const checkpoints = columns({
  workspaceId: text('workspace_id'),
  seq: integer('seq'),
  hash: text('hash'),
  signed_at: text('signed_at'),
  key_id: text('key_id'),
  signature: text('signature'),
  published_at: integer('published_at'),
});

const checkpointColumns = checkpoints.omit('workspaceId');

export async function insertPublishedCheckpoint(
  sql: Sql,
  workspaceId: string,
  checkpoint: PublishedCheckpoint,
): Promise<void> {
  const row = checkpoints.insert({ ...checkpoint, workspaceId });
  await sql.run(`INSERT INTO evidence_checkpoints (${row.columns}) VALUES ${row.values}`, row.params);
}

export async function newestPublishedCheckpoint(
  sql: Sql,
  workspaceId: string,
): Promise<PublishedCheckpoint | undefined> {
  const row = await sql.one(
    `SELECT ${checkpointColumns.select()} FROM evidence_checkpoints WHERE workspace_id = $1 ORDER BY seq DESC LIMIT 1`,
    [workspaceId],
  );
  return row && checkpointColumns.decode(row);
}

/** Published checkpoints after `afterSeq`, or published at or after `sinceMs`, oldest first. */
export async function listPublishedCheckpoints(
  sql: Sql,
  workspaceId: string,
  since: { afterSeq: number } | { sinceMs: number },
  limit: number,
): Promise<PublishedCheckpoint[]> {
  const rows = await sql.all(
    `SELECT ${checkpointColumns.select()} FROM evidence_checkpoints WHERE workspace_id = $1 AND ${
      'afterSeq' in since ? 'seq > $2' : 'published_at >= $2'
    } ORDER BY seq LIMIT $3`,
    [workspaceId, 'afterSeq' in since ? since.afterSeq : since.sinceMs, limit],
  );
  return checkpointColumns.decodeAll(rows);
}

const chainIds = heads.pick('workspaceId');

/**
 * Workspaces whose chain moved past their newest published checkpoint, published before
 * `publishedBefore` (or never), in pages by workspace id: the newest published checkpoint is found
 * through the primary key.
 */
export const chainsToPublish = async (
  sql: Sql,
  publishedBefore: number,
  afterWorkspace: string,
  limit: number,
) =>
  chainIds.decodeAll(
    await sql.all(
      `SELECT ${chainIds.select('h')} FROM evidence_heads h
     WHERE h.workspace_id > $3 AND h.seq > COALESCE((SELECT c.seq FROM evidence_checkpoints c WHERE c.workspace_id = h.workspace_id
                             ORDER BY c.seq DESC LIMIT 1), 0)
       AND COALESCE((SELECT c.published_at FROM evidence_checkpoints c WHERE c.workspace_id = h.workspace_id
                     ORDER BY c.seq DESC LIMIT 1), 0) < $1
     ORDER BY h.workspace_id LIMIT $2`,
      [publishedBefore, limit, afterWorkspace],
    ),
  );

/** Every column of `signing_keys`: the service's evidence signing keys. */
const signingKeys = columns({
  id: text('id'),
  /** Null for a key given by AUDIT_SIGNING_KEY, which is not stored. */
  privateKey: nullable(text('private_key')),
  publicKey: text('public_key'),
  createdAt: integer('created_at'),
});

export type SigningKeyRow = RecordOf<typeof signingKeys.fields>;

export const listSigningKeys = async (sql: Sql) =>
  signingKeys.decodeAll(
    await sql.all(`SELECT ${signingKeys.select()} FROM signing_keys ORDER BY created_at, id`),
  );

export async function findSigningKey(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${signingKeys.select()} FROM signing_keys WHERE id = $1`, [id]);
  return row && signingKeys.decode(row);
}

/** Keeps an existing row: a key's id is derived from the key itself. */
export async function insertSigningKey(sql: Sql, key: SigningKeyRow): Promise<void> {
  const row = signingKeys.insert(key);
  await sql.run(
    `INSERT INTO signing_keys (${row.columns}) VALUES ${row.values} ON CONFLICT (id) DO NOTHING`,
    row.params,
  );
}
