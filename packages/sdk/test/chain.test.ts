import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { ChainWalk, type EvidenceEntry, entryHashInput, GENESIS_HASH } from '../src/chain.ts';

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
  const w = new ChainWalk(null, checkpoint);
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
  assert.deepEqual(walk(entries.slice(0, 3), checkpoint).firstInvalid, { seq: 4, reason: 'sequence_gap' });
});

test('a rebuilt chain that disagrees with the checkpoint is caught', () => {
  const entries = chain(5);
  assert.deepEqual(walk(entries, { seq: 5, hash: 'f'.repeat(64) }).firstInvalid, {
    seq: 5,
    reason: 'hash_mismatch',
  });
});
