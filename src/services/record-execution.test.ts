/** The recorder's own transaction: about MAX_BATCH results' worth of workspaces, its locks in one order. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Hold } from '../domain/hold.ts';
import { workspacesToWrite } from './record-execution.ts';

const results = (workspaceId: string, count: number) =>
  Array.from({ length: count }, () => ({ hold: { workspaceId } as Hold }));

test('the recorder writes about 200 results a transaction, workspaces sorted; one large workspace alone', () => {
  const due = [...results('ws_c', 150), ...results('ws_a', 40), ...results('ws_b', 30)];
  assert.deepEqual(workspacesToWrite(due), ['ws_a', 'ws_c']);
  assert.deepEqual(workspacesToWrite(results('ws_big', 5_000)), ['ws_big']);
  // 100,000 due results (after an outage) neither throw nor make one transaction of them all.
  const many = Array.from({ length: 1_000 }, (_, i) =>
    results(`ws_${String(i).padStart(4, '0')}`, 100),
  ).flat();
  assert.deepEqual(workspacesToWrite(many), ['ws_0000', 'ws_0001']);
});
