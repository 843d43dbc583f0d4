import type { Checkpoint, EvidenceEntry, InvalidReason } from '../../packages/sdk/src/chain.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';

export interface ChainHead {
  seq: number;
  hash: string;
  signedAt: string | null;
  keyId: string | null;
  signature: string | null;
}

const headColumns = `seq, hash, signed_at AS "signedAt", key_id AS "keyId", signature`;

export async function insertChainHead(sql: Sql, workspaceId: string, genesisHash: string): Promise<void> {
  await sql.run('INSERT INTO evidence_heads (workspace_id, seq, hash) VALUES ($1, 0, $2)', [
    workspaceId,
    genesisHash,
  ]);
}

/** Locks the head (PostgreSQL), so appends to one workspace's chain happen one at a time. */
export const lockChainHead = (sql: Sql, workspaceId: string) =>
  sql.one<ChainHead>(`SELECT ${headColumns} FROM evidence_heads WHERE workspace_id = $1 FOR UPDATE`, [
    workspaceId,
  ]);

export const findChainHead = (sql: Sql, workspaceId: string) =>
  sql.one<ChainHead>(`SELECT ${headColumns} FROM evidence_heads WHERE workspace_id = $1`, [workspaceId]);

/** What the signer checks of a head before it extends the chain (services/chain-guard.ts), in one read. */
export interface HeadUnderCheck extends ChainHead {
  frozenSeq: number | null;
  frozenReason: string | null;
  /** The highest entry stored, whatever the head says. */
  lastSeq: number | null;
  lastHash: string | null;
  published: { seq: number; hash: string; signedAt: string } | null;
}

export async function headUnderCheck(sql: Sql, workspaceId: string): Promise<HeadUnderCheck | undefined> {
  const row = await sql.one<Record<string, unknown>>(
    `SELECT ${headColumns}, frozen_seq AS "frozenSeq", frozen_reason AS "frozenReason",
       (SELECT e.seq FROM evidence e WHERE e.workspace_id = $1 ORDER BY e.seq DESC LIMIT 1) AS "lastSeq",
       (SELECT e.hash FROM evidence e WHERE e.workspace_id = $1 ORDER BY e.seq DESC LIMIT 1) AS "lastHash",
       (SELECT c.seq FROM evidence_checkpoints c WHERE c.workspace_id = $1 ORDER BY c.seq DESC LIMIT 1) AS "publishedSeq",
       (SELECT c.hash FROM evidence_checkpoints c WHERE c.workspace_id = $1 ORDER BY c.seq DESC LIMIT 1) AS "publishedHash",
       (SELECT c.signed_at FROM evidence_checkpoints c WHERE c.workspace_id = $1 ORDER BY c.seq DESC LIMIT 1) AS "publishedAt"
     FROM evidence_heads WHERE workspace_id = $1`,
    [workspaceId],
  );
  if (!row) return undefined;
  const number = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return {
    seq: Number(row.seq),
    hash: String(row.hash),
    signedAt: (row.signedAt as string | null) ?? null,
    keyId: (row.keyId as string | null) ?? null,
    signature: (row.signature as string | null) ?? null,
    frozenSeq: number(row.frozenSeq),
    frozenReason: (row.frozenReason as string | null) ?? null,
    lastSeq: number(row.lastSeq),
    lastHash: (row.lastHash as string | null) ?? null,
    published:
      row.publishedSeq === null || row.publishedSeq === undefined
        ? null
        : {
            seq: Number(row.publishedSeq),
            hash: String(row.publishedHash),
            signedAt: String(row.publishedAt),
          },
  };
}

/** The hash stored for entry `seq` (undefined: none). */
export const entryHashAt = async (sql: Sql, workspaceId: string, seq: number) =>
  (
    await sql.one<{ hash: string }>('SELECT hash FROM evidence WHERE workspace_id = $1 AND seq = $2', [
      workspaceId,
      seq,
    ])
  )?.hash;

/** The newest entry of a type at or before `seq`, with when it was appended. */
export const newestEntryOfType = (sql: Sql, workspaceId: string, type: string, atOrBefore: number) =>
  sql.one<{ seq: number; occurred_at: string }>(
    'SELECT seq, occurred_at FROM evidence WHERE workspace_id = $1 AND type = $2 AND seq <= $3 ORDER BY seq DESC LIMIT 1',
    [workspaceId, type, atOrBefore],
  );

/** The break recorded when the chain was frozen, if it is. */
export async function recordedFreeze(sql: Sql, workspaceId: string) {
  const row = await sql.one<{ seq: number | null; reason: string | null }>(
    'SELECT frozen_seq AS seq, frozen_reason AS reason FROM evidence_heads WHERE workspace_id = $1',
    [workspaceId],
  );
  return row?.seq === null || row?.seq === undefined
    ? null
    : { seq: Number(row.seq), reason: (row.reason ?? 'checkpoint_invalid') as InvalidReason };
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
export function frozenChains(sql: Sql, also: string[]) {
  const listed = also.map((_, i) => `$${i + 1}`).join(', ');
  return sql.all<{ workspaceId: string; slug: string }>(
    `SELECT h.workspace_id AS "workspaceId", w.slug FROM evidence_heads h JOIN workspaces w ON w.id = h.workspace_id
     WHERE h.frozen_at IS NOT NULL${listed ? ` OR h.workspace_id IN (${listed})` : ''} ORDER BY w.slug`,
    also,
  );
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
  const values = entries.map((_, i) => `($1, ${[2, 3, 4, 5, 6, 7].map((n) => `$${n + i * 6}`).join(', ')})`);
  return [
    {
      text: `INSERT INTO evidence (workspace_id, seq, prev_hash, type, occurred_at, data, hash) VALUES ${values.join(', ')}`,
      params: [
        workspaceId,
        ...entries.flatMap((entry) => [
          entry.seq,
          entry.prev_hash,
          entry.type,
          entry.occurred_at,
          entry.data,
          entry.hash,
        ]),
      ],
    },
    {
      text: 'UPDATE evidence_heads SET seq = $2, hash = $3, signed_at = $4, key_id = $5, signature = $6 WHERE workspace_id = $1',
      params: [workspaceId, head.seq, head.hash, head.signedAt, head.keyId, head.signature],
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
  const rows = await sql.all<Omit<StoredEntry, 'orgId'>>(
    `SELECT seq, prev_hash, type, occurred_at, data, hash FROM evidence
     WHERE workspace_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
    [workspaceId, from, to, limit],
  );
  return rows.map((row) => ({ ...row, orgId }));
}

/** The seq and type of up to `limit` entries from `from` on, without their data (which may be large). */
export const entryTypesFrom = (sql: Sql, workspaceId: string, from: number, limit: number) =>
  sql.all<{ seq: number; type: string }>(
    'SELECT seq, type FROM evidence WHERE workspace_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3',
    [workspaceId, from, limit],
  );

/**
 * The entries at these seqs as stored, each with the `prev_hash` of the entry after it (null for the
 * last one): one read by primary key, for checking that they are what the chain holds.
 */
export async function entriesAt(
  sql: Sql,
  workspaceId: string,
  seqs: readonly number[],
): Promise<(Omit<StoredEntry, 'orgId'> & { nextPrevHash: string | null })[]> {
  if (seqs.length === 0) return [];
  const listed = seqs.map((_, i) => `$${i + 2}`).join(', ');
  const rows = await sql.all<Omit<StoredEntry, 'orgId'> & { nextPrevHash: string | null }>(
    `SELECT e.seq, e.prev_hash, e.type, e.occurred_at, e.data, e.hash,
       (SELECT n.prev_hash FROM evidence n WHERE n.workspace_id = e.workspace_id AND n.seq = e.seq + 1) AS "nextPrevHash"
     FROM evidence e WHERE e.workspace_id = $1 AND e.seq IN (${listed}) ORDER BY e.seq`,
    [workspaceId, ...seqs],
  );
  return rows.map((row) => ({ ...row, seq: Number(row.seq), nextPrevHash: row.nextPrevHash ?? null }));
}

/**
 * Entries of these types after `after` up to `upTo` whose data names the hold (the caller checks
 * `data.hold`): a range of the primary key, short where the hold's approval is recent.
 */
export function holdEntriesBetween(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  range: { after: number; upTo: number },
  types: readonly string[],
) {
  const listed = types.map((_, i) => `$${i + 5}`).join(', ');
  return sql.all<{ seq: number; type: string; data: string }>(
    `SELECT seq, type, data FROM evidence WHERE workspace_id = $1 AND seq > $2 AND seq <= $3
       AND data LIKE $4 AND type IN (${listed}) ORDER BY seq`,
    [workspaceId, range.after, range.upTo, `%"hold":"${holdId}"%`, ...types],
  );
}

/** The data of the entry `seq`, as stored (JSON text). */
export const entryDataAt = async (sql: Sql, workspaceId: string, seq: number) =>
  (
    await sql.one<{ data: string }>('SELECT data FROM evidence WHERE workspace_id = $1 AND seq = $2', [
      workspaceId,
      seq,
    ])
  )?.data;

/** When the entry `seq` was appended (ISO text, which sorts as time does); undefined for none. */
export async function entryTimeAt(sql: Sql, workspaceId: string, seq: number): Promise<string | undefined> {
  const row = await sql.one<{ occurred_at: string }>(
    'SELECT occurred_at FROM evidence WHERE workspace_id = $1 AND seq = $2',
    [workspaceId, seq],
  );
  return row?.occurred_at;
}

/** The highest seq stored, whatever the head says (0 for none). */
export async function lastEntrySeq(sql: Sql, workspaceId: string): Promise<number> {
  const row = await sql.one<{ seq: number | null }>(
    'SELECT max(seq) AS seq FROM evidence WHERE workspace_id = $1',
    [workspaceId],
  );
  return Number(row?.seq ?? 0);
}

/** A checkpoint published outside the database (the checkpoints API, the evidence.checkpoint event). */
export type PublishedCheckpoint = Checkpoint & { published_at: number };

const checkpointColumns = 'seq, hash, signed_at, key_id, signature, published_at';

export async function insertPublishedCheckpoint(
  sql: Sql,
  workspaceId: string,
  checkpoint: PublishedCheckpoint,
): Promise<void> {
  const { seq, hash, signed_at, key_id, signature, published_at } = checkpoint;
  await sql.run(
    `INSERT INTO evidence_checkpoints (workspace_id, ${checkpointColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [workspaceId, seq, hash, signed_at, key_id, signature, published_at],
  );
}

export const newestPublishedCheckpoint = (sql: Sql, workspaceId: string) =>
  sql.one<PublishedCheckpoint>(
    `SELECT ${checkpointColumns} FROM evidence_checkpoints WHERE workspace_id = $1 ORDER BY seq DESC LIMIT 1`,
    [workspaceId],
  );

/** Published checkpoints after `afterSeq`, or published at or after `sinceMs`, oldest first. */
export const listPublishedCheckpoints = (
  sql: Sql,
  workspaceId: string,
  since: { afterSeq: number } | { sinceMs: number },
  limit: number,
) =>
  sql.all<PublishedCheckpoint>(
    `SELECT ${checkpointColumns} FROM evidence_checkpoints WHERE workspace_id = $1 AND ${
      'afterSeq' in since ? 'seq > $2' : 'published_at >= $2'
    } ORDER BY seq LIMIT $3`,
    [workspaceId, 'afterSeq' in since ? since.afterSeq : since.sinceMs, limit],
  );

/**
 * Workspaces whose chain moved past their newest published checkpoint, published before
 * `publishedBefore` (or never), in pages by workspace id: the newest published checkpoint is found
 * through the primary key.
 */
export const chainsToPublish = (sql: Sql, publishedBefore: number, afterWorkspace: string, limit: number) =>
  sql.all<{ workspaceId: string }>(
    `SELECT h.workspace_id AS "workspaceId" FROM evidence_heads h
     WHERE h.workspace_id > $3 AND h.seq > COALESCE((SELECT c.seq FROM evidence_checkpoints c WHERE c.workspace_id = h.workspace_id
                             ORDER BY c.seq DESC LIMIT 1), 0)
       AND COALESCE((SELECT c.published_at FROM evidence_checkpoints c WHERE c.workspace_id = h.workspace_id
                     ORDER BY c.seq DESC LIMIT 1), 0) < $1
     ORDER BY h.workspace_id LIMIT $2`,
    [publishedBefore, limit, afterWorkspace],
  );

export interface SigningKeyRow {
  id: string;
  privateKey: string | null;
  publicKey: string;
  createdAt: number;
}

const keyColumns = 'id, private_key AS "privateKey", public_key AS "publicKey", created_at AS "createdAt"';

export const listSigningKeys = (sql: Sql) =>
  sql.all<SigningKeyRow>(`SELECT ${keyColumns} FROM signing_keys ORDER BY created_at, id`);

export const findSigningKey = (sql: Sql, id: string) =>
  sql.one<SigningKeyRow>(`SELECT ${keyColumns} FROM signing_keys WHERE id = $1`, [id]);

/** Keeps an existing row: a key's id is derived from the key itself. */
export async function insertSigningKey(sql: Sql, key: SigningKeyRow): Promise<void> {
  await sql.run(
    'INSERT INTO signing_keys (id, private_key, public_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING',
    [key.id, key.privateKey, key.publicKey, key.createdAt],
  );
}
