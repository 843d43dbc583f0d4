import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { canonicalJson } from '../src/canonical-json.ts';
import {
  ChainWalk,
  EVIDENCE_EXPORT_FORMAT,
  type EvidenceEntry,
  entryHashInput,
  entryHashInputWithData,
  GENESIS_HASH,
} from '../src/chain.ts';
import { verifyEvidenceExport } from '../src/evidence.ts';

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

function chain(length: number): EvidenceEntry[] {
  const entries: EvidenceEntry[] = [];
  let prev = GENESIS_HASH;
  for (let seq = 1; seq <= length; seq++) {
    const unsigned = {
      seq,
      prev_hash: prev,
      orgId: 'org_1',
      type: 'test',
      occurred_at: '2026-01-01T00:00:00.000Z',
      data: { n: seq },
    };
    prev = sha256Hex(entryHashInput(unsigned));
    entries.push({ ...unsigned, hash: prev });
  }
  return entries;
}

function walk(entries: EvidenceEntry[], checkpoint: { seq: number; hash: string } | null = null) {
  const w = new ChainWalk(null, checkpoint ? [checkpoint] : []);
  for (const entry of entries) if (!w.push(entry, sha256Hex(entryHashInput(entry)))) break;
  w.finish(Number.MAX_SAFE_INTEGER);
  return w;
}

test('an intact chain verifies', () => {
  const entries = chain(5);
  const w = walk(entries, { seq: 5, hash: entries[4]!.hash });
  assert.equal(w.firstInvalid, null);
  assert.equal(w.checked, 5);
  assert.deepEqual(w.head, { seq: 5, hash: entries[4]!.hash });
});

test('a changed entry is reported at its own seq', () => {
  const entries = chain(5);
  entries[2] = { ...entries[2]!, data: { n: 999 } };
  assert.deepEqual(walk(entries).firstInvalid, { seq: 3, reason: 'hash_mismatch' });
});

test('a rewritten entry with a recomputed hash breaks the next link', () => {
  const entries = chain(5);
  const forged = { ...entries[2]!, data: { n: 999 } };
  entries[2] = { ...forged, hash: sha256Hex(entryHashInput(forged)) };
  assert.deepEqual(walk(entries).firstInvalid, { seq: 4, reason: 'broken_link' });
});

test('a removed entry is a sequence gap', () => {
  const entries = chain(5);
  entries.splice(1, 1);
  assert.deepEqual(walk(entries).firstInvalid, { seq: 2, reason: 'sequence_gap' });
});

test('entries cut off the end are found through the signed checkpoint', () => {
  const entries = chain(5);
  const checkpoint = { seq: 5, hash: entries[4]!.hash };
  assert.deepEqual(walk(entries.slice(0, 3), checkpoint).firstInvalid, { seq: 4, reason: 'truncated' });
});

test('a rebuilt chain that disagrees with the checkpoint is caught', () => {
  const entries = chain(5);
  assert.deepEqual(walk(entries, { seq: 5, hash: 'f'.repeat(64) }).firstInvalid, {
    seq: 5,
    reason: 'checkpoint_invalid',
  });
});

/** An export of `entries` with an unsigned checkpoint at its end (these tests check no signature). */
function exportOf(entries: EvidenceEntry[]): string {
  const last = entries.at(-1);
  const header = {
    format: EVIDENCE_EXPORT_FORMAT,
    orgId: 'org_1',
    exported_at: '2026-01-02T00:00:00.000Z',
    checkpoint: last && {
      seq: last.seq,
      hash: last.hash,
      signed_at: last.occurred_at,
      key_id: 'none',
      signature: '',
    },
  };
  return [header, ...entries].map((line) => JSON.stringify(line)).join('\n');
}

test('an export longer than the digests in flight is walked in order, and a break is found at its seq', async () => {
  const entries = chain(300);
  const intact = await verifyEvidenceExport(exportOf(entries));
  assert.equal(intact.checked, 300);
  assert.deepEqual(intact.head, { seq: 300, hash: entries[299]!.hash });
  assert.equal(intact.first_invalid, null);

  for (const seq of [1, 63, 64, 65, 200, 300]) {
    const changed = entries.map((e) => (e.seq === seq ? { ...e, data: { n: -1 } } : e));
    const result = await verifyEvidenceExport(exportOf(changed));
    assert.deepEqual(result.first_invalid, { seq, reason: 'hash_mismatch' }, `tampered at ${seq}`);
    assert.equal(result.checked, seq - 1);
  }
});

test('a bad line after a break reports the break; a bad line in an intact chain is an error', async () => {
  const entries = chain(100);
  const changed = entries.map((e) => (e.seq === 40 ? { ...e, data: { n: -1 } } : e));
  const broken = await verifyEvidenceExport(`${exportOf(changed)}\nnot json\n`);
  assert.deepEqual(broken.first_invalid, { seq: 40, reason: 'hash_mismatch' });
  await assert.rejects(verifyEvidenceExport(`${exportOf(entries)}\nnot json\n`), /line 102 is not JSON/);
});

test('the hash input is the canonical JSON of the entry, whether its data is given as a value or as canonical text', () => {
  const datas = [
    { n: 1 },
    null,
    [],
    'text "quoted" \u2028 é',
    { z: [1, { b: 2, a: '\u0000' }], a: -0.5, é: true },
  ];
  for (const data of datas) {
    const entry = {
      seq: 7,
      prev_hash: 'ab'.repeat(32),
      orgId: 'org_"1"',
      type: 'hold.created',
      occurred_at: '2026-01-01T00:00:00.000Z',
      data,
    };
    const expected = canonicalJson({ ...entry });
    assert.equal(entryHashInput(entry), expected);
    assert.equal(entryHashInputWithData(entry, canonicalJson(data)), expected);
  }
});
