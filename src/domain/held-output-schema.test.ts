import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listedWithHeldAnswer, withHeldAnswer } from './held-output-schema.ts';

test('a declared output schema also takes the held answer; references into $defs still resolve', () => {
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { total: { $ref: '#/$defs/money' } },
    required: ['total'],
    $defs: { money: { type: 'number' } },
  };
  const widened = withHeldAnswer(schema);
  assert.equal(widened.type, 'object');
  assert.equal(widened.$schema, schema.$schema);
  assert.deepEqual(widened.$defs, schema.$defs);
  const [own, held] = widened.anyOf as Record<string, unknown>[];
  assert.deepEqual(own, { type: 'object', properties: schema.properties, required: ['total'] });
  assert.deepEqual((held as { required: string[] }).required, ['service']);
});

test('a tool without an output schema is listed as it is', () => {
  const tool: { name: string; outputSchema?: unknown } = { name: 'echo' };
  assert.equal(listedWithHeldAnswer(tool), tool);
  assert.ok(
    'anyOf' in (listedWithHeldAnswer({ ...tool, outputSchema: { type: 'object' } }).outputSchema as object),
  );
});
