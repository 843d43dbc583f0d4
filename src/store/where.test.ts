import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Where } from './where.ts';

test('conditions are joined with AND, each `?` numbered after the parameters before it', () => {
  const where = new Where('workspace_id = $1', ['ws']);
  assert.equal(String(where), 'workspace_id = $1');
  where.and('status = ?', 'pending').and('(created_at < ? OR (created_at = ? AND id < ?))', 5, 5, 'h1');
  assert.equal(
    String(where),
    'workspace_id = $1 AND status = $2 AND (created_at < $3 OR (created_at = $4 AND id < $5))',
  );
  assert.equal(where.param(50), '$6');
  assert.deepEqual(where.params, ['ws', 'pending', 5, 5, 'h1', 50]);
});

test("a subquery's clause appends to the statement's parameters", () => {
  const params: unknown[] = ['ws', 'key'];
  const where = new Where('workspace_id = $1', params).and('created_at > ?', 10);
  assert.equal(`${where}`, 'workspace_id = $1 AND created_at > $3');
  assert.deepEqual(params, ['ws', 'key', 10]);
});

test('a condition must have a value for each placeholder', () => {
  const where = new Where('workspace_id = $1', ['ws']);
  assert.throws(() => where.and('status = ?'), /0 values for 1 placeholders/);
  assert.throws(() => where.and('status = ?', 'a', 'b'), /2 values for 1 placeholders/);
});
