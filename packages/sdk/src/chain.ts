/**
 * The rules of the per-workspace hash chain (decisions.md, GET /api/v1/audit/verify). The service
 * builds and verifies its chain with this very module, so an auditor's offline check runs the same code.
 */
import { canonicalJson } from './canonical-json.ts';

export const GENESIS_HASH = '0'.repeat(64);

export interface EvidenceEntry {
  seq: number;
  prev_hash: string;
  orgId: string;
  type: string;
  occurred_at: string;
  data: unknown;
  hash: string;
}

/**
 * Why a chain does not verify. The first three concern the entries; the others compare the entries
 * with signed checkpoints: `checkpoint_missing` (entries that no trusted checkpoint covers),
 * `checkpoint_invalid` (a checkpoint not signed by a trusted key, or whose hash is not the entry's at
 * its seq), `truncated` (a checkpoint names an entry that is no longer there) and `rewritten` (the chain
 * does not hold an earlier checkpoint you kept, entry for entry).
 */
export type InvalidReason =
  | 'hash_mismatch'
  | 'broken_link'
  | 'sequence_gap'
  | 'checkpoint_missing'
  | 'checkpoint_invalid'
  | 'truncated'
  | 'rewritten';

/** A checkpoint the walk compares the chain with: the entry at `seq` must be there, with `hash`. */
export interface Pin {
  seq: number;
  hash: string;
  /** The reason when the chain disagrees; default `checkpoint_invalid`, or `truncated` when the entry is gone. */
  reason?: 'rewritten';
}

/** A signed chain head: Ed25519 over `checkpointInput`, base64. */
export interface Checkpoint {
  seq: number;
  hash: string;
  signed_at: string;
  key_id: string;
  signature: string;
}

/** An evidence export is JSON Lines: this header, then every entry from seq 1, oldest first. */
export const EVIDENCE_EXPORT_FORMAT = 'approvals-evidence/1';

export interface EvidenceExportHeader {
  format: typeof EVIDENCE_EXPORT_FORMAT;
  orgId: string;
  exported_at: string;
  /** The chain head the export ends at; null for a chain without entries. */
  checkpoint: Checkpoint | null;
}

/** The exact bytes an entry's hash covers. */
export function entryHashInput(entry: Omit<EvidenceEntry, 'hash'>): string {
  return entryHashInputWithData(entry, canonicalJson(entry.data));
}

/**
 * The same bytes for an entry whose `data` is already canonical JSON text (as the server stores it),
 * without parsing and writing it again: the canonical form of the entry with its keys in sorted order.
 */
export function entryHashInputWithData(entry: Omit<EvidenceEntry, 'hash' | 'data'>, data: string): string {
  const { seq, prev_hash, orgId, type, occurred_at } = entry;
  return hashInputsOf(orgId)(seq, prev_hash, type, occurred_at, data);
}

/**
 * `entryHashInputWithData` for the entries of one workspace, taken field by field (a walk of a whole
 * chain makes no object per entry), with `orgId` serialized once for them all.
 */
export function hashInputsOf(orgId: string) {
  const org = canonicalJson(orgId);
  return (seq: unknown, prev_hash: unknown, type: unknown, occurred_at: unknown, data: string) =>
    `{"data":${data},"occurred_at":${canonicalJson(occurred_at)},"orgId":${org},"prev_hash":${canonicalJson(prev_hash)},"seq":${canonicalJson(seq)},"type":${canonicalJson(type)}}`;
}

/** The bytes a checkpoint signature covers. */
export function checkpointInput(c: {
  orgId: string;
  seq: number;
  hash: string;
  signed_at: string;
  key_id: string;
}) {
  return canonicalJson({
    orgId: c.orgId,
    seq: c.seq,
    hash: c.hash,
    signed_at: c.signed_at,
    key_id: c.key_id,
  });
}

/**
 * Walks entries in order, one at a time, so a long chain is checked in pages with flat memory.
 * `previous` is the entry before the first one pushed (null when starting at seq 1). Each of `pins`
 * fixes the hash at its seq, so rewriting or cutting off entries a signed checkpoint covers shows.
 */
export class ChainWalk {
  checked = 0;
  head: { seq: number; hash: string } | null;
  firstInvalid: { seq: number; reason: InvalidReason } | null = null;
  private readonly pins: Pin[];

  constructor(previous: { seq: number; hash: string } | null, pins: Pin[]) {
    this.head = previous;
    this.pins = pins;
  }

  /**
   * `recomputed` is the hex SHA-256 of `entryHashInput(entry)`, computed by the caller (synchronously
   * on the server, with WebCrypto in the SDK). Returns false once the chain is found broken; later
   * entries are not looked at.
   */
  push(entry: Pick<EvidenceEntry, 'seq' | 'prev_hash' | 'hash'>, recomputed: string): boolean {
    if (this.firstInvalid) return false;
    const expectedSeq = (this.head?.seq ?? 0) + 1;
    if (entry.seq !== expectedSeq) return this.fail(expectedSeq, 'sequence_gap');
    if (entry.prev_hash !== (this.head?.hash ?? GENESIS_HASH)) return this.fail(entry.seq, 'broken_link');
    const hash = recomputed;
    if (hash !== entry.hash) return this.fail(entry.seq, 'hash_mismatch');
    for (const pin of this.pins) {
      if (pin.seq === entry.seq && pin.hash !== hash)
        return this.fail(entry.seq, pin.reason ?? 'checkpoint_invalid');
    }
    this.checked += 1;
    this.head = { seq: entry.seq, hash };
    return true;
  }

  /** Call after the last entry of a range that ends at `rangeEnd` (Infinity: the end of the chain). */
  finish(rangeEnd: number): void {
    const lastSeq = this.head?.seq ?? 0;
    const cutOff = this.pins.filter((pin) => pin.seq > lastSeq && pin.seq <= rangeEnd);
    if (this.firstInvalid || cutOff.length === 0) return;
    this.fail(lastSeq + 1, cutOff.some((pin) => pin.reason) ? 'rewritten' : 'truncated');
  }

  /** Entries after `coveredSeq` (the newest trusted checkpoint, 0 for none) are not vouched for. */
  requireCoverage(coveredSeq: number): void {
    const lastSeq = this.head?.seq ?? 0;
    if (!this.firstInvalid && lastSeq > coveredSeq) this.fail(coveredSeq + 1, 'checkpoint_missing');
  }

  fail(seq: number, reason: InvalidReason): false {
    this.firstInvalid ??= { seq, reason };
    return false;
  }
}
