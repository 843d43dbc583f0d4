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
} from './chain.ts';
import { ApprovalsError } from './errors.ts';
import { subtle } from './web-crypto.ts';

/** A key as published at `{base_url}/.well-known/approvals-audit-key` (each item of its `keys`). */
export interface AuditKey {
  key_id: string;
  jwk: { kty: string; crv: string; x: string };
}

export interface EvidenceVerifyOptions {
  /**
   * The service's keys: the JSON of `{base_url}/.well-known/approvals-audit-key`, or its `keys` list.
   * Fetch it yourself, from the service, not from whoever handed you the export. Without it the
   * checkpoint's signature is not checked.
   */
  keys?: { keys: AuditKey[] } | AuditKey[];
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
  /** The first entry found wrong; checking stops there. Null when every entry is good. */
  first_invalid: { seq: number; reason: InvalidReason } | null;
  /** The signed chain head the export was made at. */
  checkpoint: Checkpoint | null;
  /**
   * `valid`: one of the keys signed the checkpoint. `invalid`: none did, or the export has entries but
   * no checkpoint. `unchecked`: no keys were given.
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
  const walk = new ChainWalk(null, checkpoint);
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
  walk.finish(Number.POSITIVE_INFINITY);
  const signature = await checkSignature(
    orgId,
    checkpoint,
    walk.checked > 0 || walk.firstInvalid !== null,
    options,
  );
  return {
    valid: walk.firstInvalid === null && signature !== 'invalid',
    orgId,
    checked: walk.checked,
    head: walk.head,
    first_invalid: walk.firstInvalid,
    checkpoint,
    signature,
  };
}

async function checkSignature(
  orgId: string,
  checkpoint: Checkpoint | null,
  hasEntries: boolean,
  options: EvidenceVerifyOptions,
): Promise<EvidenceVerification['signature']> {
  if (!options.keys) return 'unchecked';
  if (!checkpoint) return hasEntries ? 'invalid' : 'valid';
  const keys = Array.isArray(options.keys) ? options.keys : options.keys.keys;
  const key = keys.find((candidate) => candidate.key_id === checkpoint.key_id);
  if (!key) return 'invalid';
  let publicKey: CryptoKey;
  try {
    publicKey = await subtle().importKey(
      'jwk',
      { kty: key.jwk.kty, crv: key.jwk.crv, x: key.jwk.x },
      { name: 'Ed25519' },
      false,
      ['verify'],
    );
  } catch (error) {
    if ((error as Error)?.name === 'NotSupportedError') {
      throw new ApprovalsError(
        'This runtime has no Ed25519 in WebCrypto; the checkpoint cannot be checked here',
      );
    }
    return 'invalid';
  }
  const signed = new TextEncoder().encode(checkpointInput({ orgId, ...checkpoint }));
  const signature = base64ToBytes(checkpoint.signature);
  if (!signature) return 'invalid';
  return (await subtle().verify({ name: 'Ed25519' }, publicKey, signature, signed)) ? 'valid' : 'invalid';
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

async function sha256Hex(text: string): Promise<string> {
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
