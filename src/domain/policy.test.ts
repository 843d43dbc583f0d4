import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type Classification, decide } from './policy.ts';

const call = (classification: Classification | null) => ({
  connection: 'SDK',
  toolName: 't',
  agentId: 'a',
  classification,
});

test('a tool never seen, or seen and unclassified, needs one admin approval (fail-closed)', () => {
  for (const classification of [null, 'new'] as const) {
    const outcome = decide(call(classification));
    assert.equal(outcome.effect, 'approval');
    assert.deepEqual(outcome.approvers, ['role:admin']);
    assert.equal(outcome.approvalsRequired, 1);
    assert.equal(outcome.timeoutMinutes, 240);
  }
});

test('classification decides; a denial carries its reason', () => {
  assert.equal(decide(call('allow')).effect, 'allow');
  assert.equal(decide(call('approval')).effect, 'approval');
  const denied = decide(call('deny'));
  assert.equal(denied.effect, 'deny');
  assert.equal(denied.reason, 'Denied by rule: Tool classified deny');
});

test('only an explicit allow classification ever allows', () => {
  fc.assert(
    fc.property(
      fc.constantFrom<Classification | null>(null, 'new', 'allow', 'approval', 'deny'),
      (classification) => {
        assert.equal(decide(call(classification)).effect === 'allow', classification === 'allow');
      },
    ),
  );
});
