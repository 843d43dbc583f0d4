import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boolean, columns, count, integer, json, nullable, text } from './columns.ts';

const things = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  size: integer('size'),
  tags: json<string[]>('tags'),
  shared: boolean('shared'),
  doneAt: nullable(integer('done_at')),
});

test('the SELECT list names each column by its field, in a join under an alias and a name of its own', () => {
  assert.equal(
    things.pick('id', 'workspaceId', 'doneAt').select(),
    'id, workspace_id AS "workspaceId", done_at AS "doneAt"',
  );
  assert.equal(things.pick('id', 'size').select('t', 'thing'), 't.id AS "thing.id", t.size AS "thing.size"');
});

test('rows of either engine decode to the same record', () => {
  const sqlite = { id: 'a', workspaceId: 'w', size: 3, tags: '["x"]', shared: 1, doneAt: null };
  const postgres = { ...sqlite, size: '3', shared: true, doneAt: undefined };
  const record = { id: 'a', workspaceId: 'w', size: 3, tags: ['x'], shared: true, doneAt: null };
  assert.deepEqual(things.decode(sqlite), record);
  assert.deepEqual(things.decode(postgres), record);
  assert.deepEqual(things.pick('id').decode({ 'thing.id': 'b' }, 'thing'), { id: 'b' });
  // A SUM over no rows is NULL: nothing counted.
  assert.deepEqual(columns({ n: count('n') }).decode({ n: null }), { n: 0 });
});

test('an INSERT of several records numbers their parameters in order, encoded', () => {
  const record = { id: 'a', workspaceId: 'w', size: 3, tags: ['x'], shared: false, doneAt: null };
  const written = things.insert(record, { ...record, id: 'b', shared: true, doneAt: 9 });
  assert.equal(written.columns, 'id, workspace_id, size, tags, shared, done_at');
  assert.equal(written.values, '($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12)');
  assert.deepEqual(written.params, ['a', 'w', 3, '["x"]', 0, null, 'b', 'w', 3, '["x"]', 1, 9]);
});

test('an UPDATE sets the fields given, null too, from the parameter asked', () => {
  assert.deepEqual(things.update({ tags: [], doneAt: null, size: undefined }, 3), {
    set: 'tags = $3, done_at = $4',
    params: ['[]', null],
  });
});
