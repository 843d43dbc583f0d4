/**
 * Offline verification of an evidence export: recomputes every hash and link of the chain and checks
 * the signed checkpoint with the service's published key, so an auditor needs nothing but the export,
 * the key and this function.
 */
import {
  ChainWalk,
  type Checkpoint,
  type EvidenceEntry,
  EVIDENCE_EXPORT_FORMAT,
  type EvidenceExportHeader,
  checkpointInput,
  entryHashInput,
  type InvalidReason,
  type Pin,
} from './chain.ts';
import { ApprovalsError } from './errors.ts';
import { subtle } from './web-crypto.ts';

/** A key as published at `{base_url}/.well-known/approvals-audit-key` (each item of its `keys`). */
export interface AuditKey {
  key_id: string;
  jwk: { kty: string; crv: string; x: string };
}

/** Ed25519 public keys: a published key, or a PEM text (SPKI) holding one or more keys. */
export type TrustedKeys = { keys: AuditKey[] } | (AuditKey | string)[] | string;

export interface EvidenceVerifyOptions {
  /**
   * The keys you trust to sign checkpoints: the service's public key as you pinned it (PEM), or the
   * JSON of `{base_url}/.well-known/approvals-audit-key`. Take them from the service's operator or the
   * service itself, never from whoever handed you the export. Without them no signature is checked.
   */
  keys?: TrustedKeys;
  /**
   * A checkpoint you kept from earlier (from `GET /api/v1/audit/checkpoints`, an `evidence.checkpoint`
   * webhook event or an earlier export's header). The export must hold its `seq` with the same hash,
   * else it was rewritten since (`rewritten`). When `keys` are given, it must be signed by one of them.
   */
  checkpoint?: Checkpoint;
}

export interface EvidenceVerification {
  /** The chain is intact and its checkpoint is signed by one of the keys (or no keys were given). */
  valid: boolean;
  /** The workspace the export is of. */
  orgId: string;
  /** Entries checked and found good. */
  checked: number;
  /** The last entry found good. */
  head: { seq: number; hash: string } | null;
  /** The first problem found; checking stops there. Null when every entry is good. */
  first_invalid: { seq: number; reason: InvalidReason } | null;
  /** The signed chain head the export was made at. */
  checkpoint: Checkpoint | null;
  /**
   * `valid`: one of the keys signed the checkpoint. `invalid`: none did, or the export has entries but
   * no checkpoint (`first_invalid` then says `checkpoint_invalid` or `checkpoint_missing`). `unchecked`:
   * no keys were given.
   */
  signature: 'valid' | 'invalid' | 'unchecked';
}

export type EvidenceExport = string | AsyncIterable<string | Uint8Array> | ReadableStream<Uint8Array>;

const DIGESTS_IN_FLIGHT = 64;

/**
 * Verifies an evidence export (JSON Lines: a header line, then one entry per line, oldest first), as
 * made by `approvals evidence export` or the app's download. Reads a stream line by line, so memory
 * stays flat however long the chain. Throws an `ApprovalsError` when the input is not an export.
 */
export async function verifyEvidenceExport(
  input: EvidenceExport,
  options: EvidenceVerifyOptions = {},
): Promise<EvidenceVerification> {
  const lines = linesOf(input);
  const first = await lines.next();
  const header = first.done ? null : parseLine(first.value, 1);
  if (!isHeader(header))
    throw new ApprovalsError(`Not an evidence export: line 1 is not a ${EVIDENCE_EXPORT_FORMAT} header`);
  const { orgId, checkpoint } = header;
  const keys = options.keys === undefined ? null : await importKeys(options.keys);
  const earlier = options.checkpoint;
  if (earlier && keys && !(await signedByOneOf(keys, orgId, earlier)))
    throw new ApprovalsError('The checkpoint given is not signed by any of the keys given');
  const pins: Pin[] = [];
  if (checkpoint) pins.push(checkpoint);
  if (earlier) pins.push({ seq: earlier.seq, hash: earlier.hash, reason: 'rewritten' });
  const walk = new ChainWalk(null, pins);
  // WebCrypto answers each digest asynchronously, and waiting for one at a time dominated the run:
  // up to DIGESTS_IN_FLIGHT are computed at once, and the entries are still walked in order.
  const inFlight: { entry: EvidenceEntry; hash: Promise<string> }[] = [];
  let broken = false;
  const walkOldest = async () => {
    const { entry, hash } = inFlight.shift()!;
    broken = !walk.push(entry, await hash);
  };
  let lineNumber = 1;
  for await (const line of lines) {
    lineNumber += 1;
    if (line.trim() === '') continue;
    let entry: unknown;
    try {
      entry = parseLine(line, lineNumber);
      if (!isEntry(entry))
        throw new ApprovalsError(`Not an evidence export: line ${lineNumber} is not an entry`);
    } catch (error) {
      // A chain already broken before this line is the answer; a bad line in an intact chain is not.
      while (inFlight.length > 0 && !broken) await walkOldest();
      if (broken) break;
      throw error;
    }
    // An entry of another workspace does not belong here, whatever its hash says.
    const hash = entry.orgId === orgId ? sha256Hex(entryHashInput(entry)) : Promise.resolve('');
    inFlight.push({ entry, hash });
    if (inFlight.length >= DIGESTS_IN_FLIGHT) await walkOldest();
    if (broken) break;
  }
  while (inFlight.length > 0 && !broken) await walkOldest();
  // A checkpoint kept from past the export's last entry: the chain exported was cut off since.
  const lastSeq = walk.head?.seq ?? 0;
  if (earlier && earlier.seq > lastSeq) walk.fail(lastSeq + 1, 'truncated');
  walk.finish(Number.POSITIVE_INFINITY);
  const hasEntries = walk.checked > 0 || walk.firstInvalid !== null;
  // Every entry must be vouched for by the export's checkpoint: entries past it were added by someone else.
  walk.requireCoverage(checkpoint?.seq ?? 0);
  let signature: EvidenceVerification['signature'] = 'unchecked';
  if (keys && checkpoint) {
    signature = (await signedByOneOf(keys, orgId, checkpoint)) ? 'valid' : 'invalid';
    if (signature === 'invalid') walk.fail(checkpoint.seq, 'checkpoint_invalid');
  } else if (keys) {
    signature = hasEntries ? 'invalid' : 'valid';
  }
  return {
    valid: walk.firstInvalid === null,
    orgId,
    checked: walk.checked,
    head: walk.head,
    first_invalid: walk.firstInvalid,
    checkpoint,
    signature,
  };
}

/** Ed25519 public keys for WebCrypto, each with its `key_id` when known. */
async function importKeys(trusted: TrustedKeys): Promise<{ keyId?: string; key: CryptoKey }[]> {
  const items = typeof trusted === 'string' ? [trusted] : Array.isArray(trusted) ? trusted : trusted.keys;
  const imported: { keyId?: string; key: CryptoKey }[] = [];
  for (const item of items) {
    if (typeof item !== 'string') {
      const { kty, crv, x } = item.jwk;
      imported.push({ keyId: item.key_id, key: await importKey('jwk', { kty, crv, x }) });
      continue;
    }
    const blocks = item.match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g) ?? [];
    if (blocks.length === 0)
      throw new ApprovalsError('A key given is neither a published key nor a PEM public key');
    for (const block of blocks) {
      const der = base64ToBytes(block.replace(/-----[A-Z ]+-----|\s/g, ''));
      if (!der) throw new ApprovalsError('A PEM public key given is not base64');
      imported.push({ key: await importKey('spki', der) });
    }
  }
  return imported;
}

async function importKey(format: 'jwk' | 'spki', data: JsonWebKey | Uint8Array<ArrayBuffer>) {
  try {
    return format === 'jwk'
      ? await subtle().importKey('jwk', data as JsonWebKey, { name: 'Ed25519' }, false, ['verify'])
      : await subtle().importKey('spki', data as Uint8Array<ArrayBuffer>, { name: 'Ed25519' }, false, [
          'verify',
        ]);
  } catch (error) {
    if ((error as Error)?.name === 'NotSupportedError') {
      throw new ApprovalsError(
        'This runtime has no Ed25519 in WebCrypto; the checkpoint cannot be checked here',
      );
    }
    throw new ApprovalsError('A key given is not an Ed25519 public key');
  }
}

/** Whether one of the keys (the one the checkpoint names, where keys have ids) signed it. */
async function signedByOneOf(
  keys: { keyId?: string; key: CryptoKey }[],
  orgId: string,
  checkpoint: Checkpoint,
): Promise<boolean> {
  const signed = new TextEncoder().encode(checkpointInput({ orgId, ...checkpoint }));
  const signature = base64ToBytes(checkpoint.signature);
  if (!signature) return false;
  for (const { keyId, key } of keys) {
    if (keyId !== undefined && keyId !== checkpoint.key_id) continue;
    if (await subtle().verify({ name: 'Ed25519' }, key, signature, signed)) return true;
  }
  return false;
}

async function* linesOf(input: EvidenceExport): AsyncGenerator<string> {
  if (typeof input === 'string') {
    yield* input.split('\n');
    return;
  }
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of chunksOf(input)) {
    rest += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    const parts = rest.split('\n');
    rest = parts.pop()!;
    yield* parts;
  }
  yield rest + decoder.decode();
}

/** Not every browser can iterate a ReadableStream with `for await`; a reader works everywhere. */
async function* chunksOf(input: AsyncIterable<string | Uint8Array> | ReadableStream<Uint8Array>) {
  if (!('getReader' in input)) {
    yield* input;
    return;
  }
  const reader = input.getReader();
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) yield read.value;
  } finally {
    reader.releaseLock();
  }
}

function parseLine(line: string, lineNumber: number): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw new ApprovalsError(`Not an evidence export: line ${lineNumber} is not JSON`);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

function isHeader(value: unknown): value is EvidenceExportHeader {
  if (!isObject(value) || value.format !== EVIDENCE_EXPORT_FORMAT || typeof value.orgId !== 'string')
    return false;
  const cp = value.checkpoint;
  return (
    cp === null ||
    (isObject(cp) &&
      Number.isSafeInteger(cp.seq) &&
      typeof cp.hash === 'string' &&
      typeof cp.signed_at === 'string' &&
      typeof cp.key_id === 'string' &&
      typeof cp.signature === 'string')
  );
}

function isEntry(value: unknown): value is EvidenceEntry {
  return (
    isObject(value) &&
    Number.isSafeInteger(value.seq) &&
    typeof value.prev_hash === 'string' &&
    typeof value.orgId === 'string' &&
    typeof value.type === 'string' &&
    typeof value.occurred_at === 'string' &&
    'data' in value &&
    typeof value.hash === 'string'
  );
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await subtle().digest('SHA-256', new TextEncoder().encode(text)));
  let hex = '';
  for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}
