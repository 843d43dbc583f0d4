import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  type Call,
  type Condition,
  type RuleDefinition,
  compileGlob,
  compilePattern,
  compileRule,
  describeTypeMismatch,
  frequencyScope,
  holds,
  matchRules,
  PERIOD_MS,
  readPath,
  scopeKey,
} from './rules.ts';

const call = (overrides: Partial<Call> = {}): Call => ({
  connection: 'SDK',
  toolName: 'payments.create',
  agentId: 'agent-1',
  arguments: {},
  ...overrides,
});

const rule = (overrides: Partial<RuleDefinition> = {}): RuleDefinition => ({
  name: 'r',
  tool: '*',
  effect: 'approval',
  ...overrides,
});

const names = (rules: RuleDefinition[], c: Call) =>
  matchRules(rules.map(compileRule), c).map((m) => m.rule.name);

/** Evaluates one condition against the arguments through the compiled form, as matchRules does. */
const check = (condition: Condition, args: Record<string, unknown>) =>
  holds(compileRule(rule({ when: [condition] })).conditions[0]!, args).result;

describe('globs', () => {
  const matches = (glob: string, name: string) => compileGlob(glob)(name);

  test('`*` matches any run of characters, including none', () => {
    assert.ok(matches('payments.*', 'payments.create'));
    assert.ok(matches('payments.*', 'payments.'));
    assert.ok(matches('payments.*', 'payments.refunds.create'));
    assert.ok(!matches('payments.*', 'payments'));
    assert.ok(!matches('payments.*', 'xpayments.create'));
    assert.ok(matches('*', 'anything:at/all-1'));
    assert.ok(matches('*', ''));
    assert.ok(matches('*.delete', 'files.delete'));
    assert.ok(!matches('*.delete', 'files.delete_all'));
    assert.ok(matches('a*b*c', 'aXXbYYc'));
    assert.ok(!matches('a*b*c', 'aXXbYYcd'));
  });

  test('`?` matches exactly one character', () => {
    assert.ok(matches('file?', 'file1'));
    assert.ok(!matches('file?', 'file'));
    assert.ok(!matches('file?', 'file12'));
    assert.ok(matches('??', 'ab'));
    assert.ok(!matches('??', 'abc'));
  });

  test('a dot is a literal dot, not "any character"', () => {
    assert.ok(matches('payments.create', 'payments.create'));
    assert.ok(!matches('payments.create', 'paymentsXcreate'));
    assert.ok(!matches('a.b', 'axb'));
  });

  test('other regular-expression characters in a name are literal', () => {
    assert.ok(matches('a.b:c/d-e', 'a.b:c/d-e'));
    assert.ok(!matches('a.b:c/d-e', 'aXb:c/d-e'));
    for (const name of ['a+b', 'a(b)', '[ab]', 'a|b', '^a$', 'a{2}', 'a\\d', 'a]b', '$x', '\\Q.\\E']) {
      assert.ok(matches(name, name), name);
    }
    assert.ok(!matches('a+b', 'aab'));
    assert.ok(!matches('a|b', 'a'));
    assert.ok(!matches('[ab]', 'a'));
    assert.ok(!matches('a{2}', 'aa'));
    assert.ok(!matches('a\\d', 'a1'));
    assert.ok(!matches('^a$', 'a'));
  });

  test('a glob is anchored at both ends', () => {
    assert.ok(!matches('send', 'send_invoice'));
    assert.ok(!matches('invoice', 'send_invoice'));
    assert.ok(!matches('send_invoice', 'xsend_invoice'));
    assert.ok(matches('send_invoice', 'send_invoice'));
  });

  test('a glob is case-sensitive', () => {
    assert.ok(!matches('payments.*', 'Payments.create'));
  });
});

describe('which calls a rule matches', () => {
  test('tool glob', () => {
    const rules = [
      rule({ name: 'pay', tool: 'payments.*' }),
      rule({ name: 'exact', tool: 'payments.create' }),
    ];
    assert.deepEqual(names(rules, call()), ['pay', 'exact']);
    assert.deepEqual(names(rules, call({ toolName: 'payments.refund' })), ['pay']);
    assert.deepEqual(names(rules, call({ toolName: 'files.read' })), []);
  });

  test('connection: absent matches any connection; present is an exact name', () => {
    const rules = [
      rule({ name: 'any' }),
      rule({ name: 'sdk', connection: 'SDK' }),
      rule({ name: 'files', connection: 'Files' }),
    ];
    assert.deepEqual(names(rules, call()), ['any', 'sdk']);
    assert.deepEqual(names(rules, call({ connection: 'Files' })), ['any', 'files']);
    assert.deepEqual(names(rules, call({ connection: 'sdk' })), ['any']);
    // The connection is a name, not a glob.
    assert.deepEqual(names([rule({ name: 'star', connection: '*' })], call()), []);
  });

  test('agent: absent or `*` matches any agent; otherwise a glob', () => {
    const rules = [
      rule({ name: 'absent' }),
      rule({ name: 'star', agent: '*' }),
      rule({ name: 'bots', agent: 'bot-?' }),
      rule({ name: 'exact', agent: 'agent-1' }),
    ];
    assert.deepEqual(names(rules, call()), ['absent', 'star', 'exact']);
    assert.deepEqual(names(rules, call({ agentId: 'bot-7' })), ['absent', 'star', 'bots']);
    assert.deepEqual(names(rules, call({ agentId: 'bot-77' })), ['absent', 'star']);
    assert.deepEqual(names(rules, call({ agentId: 'key:abc.def' })), ['absent', 'star']);
  });

  test('all conditions must hold', () => {
    const both = rule({
      name: 'both',
      when: [
        { arg: 'amount', op: 'gt', value: 1000 },
        { arg: 'currency', op: 'eq', value: 'EUR' },
      ],
    });
    assert.deepEqual(names([both], call({ arguments: { amount: 1001, currency: 'EUR' } })), ['both']);
    assert.deepEqual(names([both], call({ arguments: { amount: 1001, currency: 'USD' } })), []);
    assert.deepEqual(names([both], call({ arguments: { amount: 10, currency: 'EUR' } })), []);
    assert.deepEqual(names([rule({ name: 'none', when: [] })], call()), ['none']);
  });
});

describe('readPath', () => {
  test('nested objects and array indexes', () => {
    const args = { order: { customer: { id: 'c1' } }, items: [{ price: 5 }, { price: 7 }] };
    assert.deepEqual(readPath(args, ['order', 'customer', 'id']), { found: true, value: 'c1' });
    assert.deepEqual(readPath(args, ['items', '0', 'price']), { found: true, value: 5 });
    assert.deepEqual(readPath(args, ['items', '1', 'price']), { found: true, value: 7 });
    assert.deepEqual(readPath(args, ['items', '2', 'price']), { found: false });
    assert.deepEqual(readPath(args, ['order', 'missing']), { found: false });
    assert.deepEqual(readPath(args, ['order', 'customer', 'id', 'deeper']), { found: false });
    assert.deepEqual(readPath(args, ['order']), { found: true, value: args.order });
  });

  test('null values are found; paths through null or scalars are not', () => {
    assert.deepEqual(readPath({ a: null }, ['a']), { found: true, value: null });
    assert.deepEqual(readPath({ a: null }, ['a', 'b']), { found: false });
    assert.deepEqual(readPath({ a: 'text' }, ['a', 'length']), { found: false });
    assert.deepEqual(readPath({ a: 5 }, ['a', 'toFixed']), { found: false });
  });

  test('own properties only: inherited names are not found', () => {
    for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      assert.deepEqual(readPath({}, [key]), { found: false }, key);
      assert.deepEqual(readPath({ a: {} }, ['a', key]), { found: false }, key);
    }
    assert.deepEqual(readPath({ items: [1] }, ['items', 'map']), { found: false });
    assert.deepEqual(readPath({}, ['constructor', 'name']), { found: false });
  });

  test('…unless they are own keys of the arguments', () => {
    const args = JSON.parse('{"__proto__": {"x": 1}, "constructor": "c", "toString": 3}') as Record<
      string,
      unknown
    >;
    assert.deepEqual(readPath(args, ['__proto__', 'x']), { found: true, value: 1 });
    assert.deepEqual(readPath(args, ['constructor']), { found: true, value: 'c' });
    assert.deepEqual(readPath(args, ['toString']), { found: true, value: 3 });
  });

  test('conditions on inherited names never see the prototype', () => {
    assert.equal(check({ arg: 'constructor', op: 'exists' }, {}), false);
    assert.equal(check({ arg: 'constructor', op: 'exists', value: false }, {}), true);
    assert.equal(check({ arg: 'toString', op: 'ne', value: 1 }, {}), false);
    assert.equal(check({ arg: '__proto__', op: 'ne', value: null }, {}), false);
  });
});

describe('operators', () => {
  test('eq / ne: deep equality over canonical JSON (key order irrelevant, types matter)', () => {
    assert.equal(check({ arg: 'a', op: 'eq', value: 1 }, { a: 1 }), true);
    assert.equal(check({ arg: 'a', op: 'eq', value: 1 }, { a: 1.0 }), true);
    assert.equal(check({ arg: 'a', op: 'eq', value: 1 }, { a: '1' }), false);
    assert.equal(check({ arg: 'a', op: 'eq', value: '1' }, { a: 1 }), false);
    assert.equal(check({ arg: 'a', op: 'eq', value: true }, { a: 'true' }), false);
    assert.equal(check({ arg: 'a', op: 'eq', value: null }, { a: null }), true);
    assert.equal(check({ arg: 'a', op: 'eq', value: 0 }, { a: null }), false);
    assert.equal(check({ arg: 'a', op: 'eq', value: 0 }, { a: false }), false);
    assert.equal(check({ arg: 'a', op: 'eq', value: 'x' }, { a: 'x' }), true);
    assert.equal(check({ arg: 'a', op: 'eq', value: 'x' }, { a: 'X' }), false);
    assert.equal(
      check(
        { arg: 'a', op: 'eq', value: { x: 1, y: [1, { b: 2, a: 1 }] } },
        { a: { y: [1, { a: 1, b: 2 }], x: 1 } },
      ),
      true,
    );
    assert.equal(check({ arg: 'a', op: 'eq', value: { x: 1 } }, { a: { x: '1' } }), false);
    assert.equal(check({ arg: 'a', op: 'eq', value: [1, 2] }, { a: [2, 1] }), false);
    assert.equal(check({ arg: 'a', op: 'ne', value: 1 }, { a: '1' }), true);
    assert.equal(check({ arg: 'a', op: 'ne', value: 1 }, { a: 1 }), false);
    assert.equal(check({ arg: 'a', op: 'ne', value: { p: 1, q: 2 } }, { a: { q: 2, p: 1 } }), false);
    assert.equal(check({ arg: 'a', op: 'ne', value: { p: 1 } }, { a: { p: 1, q: 2 } }), true);
  });

  test('gt / gte / lt / lte compare numbers with numbers', () => {
    const cmp = (op: Condition['op'], actual: unknown, value: unknown) =>
      check({ arg: 'n', op, value }, { n: actual });
    assert.deepEqual(
      [cmp('gt', 1001, 1000), cmp('gt', 1000, 1000), cmp('gt', 999, 1000)],
      [true, false, false],
    );
    assert.deepEqual(
      [cmp('gte', 1001, 1000), cmp('gte', 1000, 1000), cmp('gte', 999, 1000)],
      [true, true, false],
    );
    assert.deepEqual(
      [cmp('lt', 1001, 1000), cmp('lt', 1000, 1000), cmp('lt', 999, 1000)],
      [false, false, true],
    );
    assert.deepEqual(
      [cmp('lte', 1001, 1000), cmp('lte', 1000, 1000), cmp('lte', 999, 1000)],
      [false, true, true],
    );
    assert.equal(cmp('gt', 10.5, 10.25), true);
    assert.equal(cmp('lt', -5, 0), true);
    // Numerically, not as text: 9 < 10 although "9" > "10".
    assert.equal(cmp('lt', 9, 10), true);
  });

  test('gt / gte / lt / lte compare strings with strings (code-unit order)', () => {
    const cmp = (op: Condition['op'], actual: unknown, value: unknown) =>
      check({ arg: 's', op, value }, { s: actual });
    assert.equal(cmp('gt', 'b', 'a'), true);
    assert.equal(cmp('gt', 'a', 'a'), false);
    assert.equal(cmp('gte', 'a', 'a'), true);
    assert.equal(cmp('lt', '2024-01-01', '2024-06-30'), true);
    assert.equal(cmp('lte', '2024-06-30', '2024-06-30'), true);
    assert.equal(cmp('lt', '9', '10'), false);
    assert.equal(cmp('lt', 'B', 'a'), true);
  });

  test('ordering across types is always false', () => {
    for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
      for (const [actual, value] of [
        ['1001', 1000],
        [1001, '1000'],
        [1000, '1000'],
        [null, 0],
        [true, 0],
        [[5], 1],
        [{ v: 5 }, 1],
        [5, null],
      ] as const) {
        assert.equal(
          check({ arg: 'x', op, value }, { x: actual }),
          false,
          `${JSON.stringify(actual)} ${op} ${JSON.stringify(value)}`,
        );
      }
    }
  });

  test('in / not_in: membership by deep equality', () => {
    assert.equal(check({ arg: 'c', op: 'in', value: ['EUR', 'USD'] }, { c: 'EUR' }), true);
    assert.equal(check({ arg: 'c', op: 'in', value: ['EUR', 'USD'] }, { c: 'GBP' }), false);
    assert.equal(check({ arg: 'c', op: 'in', value: [1, 2] }, { c: '1' }), false);
    assert.equal(check({ arg: 'c', op: 'in', value: [{ a: 1, b: 2 }] }, { c: { b: 2, a: 1 } }), true);
    assert.equal(check({ arg: 'c', op: 'in', value: [] }, { c: 'EUR' }), false);
    assert.equal(check({ arg: 'c', op: 'not_in', value: ['EUR', 'USD'] }, { c: 'GBP' }), true);
    assert.equal(check({ arg: 'c', op: 'not_in', value: ['EUR', 'USD'] }, { c: 'EUR' }), false);
    assert.equal(check({ arg: 'c', op: 'not_in', value: [1, 2] }, { c: '1' }), true);
    assert.equal(check({ arg: 'c', op: 'not_in', value: [] }, { c: 'EUR' }), true);
  });

  test('contains: substring of a string, element of an array', () => {
    assert.equal(check({ arg: 's', op: 'contains', value: 'prod' }, { s: 'db-prod-1' }), true);
    assert.equal(check({ arg: 's', op: 'contains', value: 'PROD' }, { s: 'db-prod-1' }), false);
    assert.equal(check({ arg: 's', op: 'contains', value: '' }, { s: 'x' }), true);
    assert.equal(check({ arg: 's', op: 'contains', value: 1 }, { s: 'a1' }), false);
    assert.equal(check({ arg: 'a', op: 'contains', value: 'admin' }, { a: ['user', 'admin'] }), true);
    assert.equal(check({ arg: 'a', op: 'contains', value: 'adm' }, { a: ['user', 'admin'] }), false);
    assert.equal(check({ arg: 'a', op: 'contains', value: 1 }, { a: ['1', 2] }), false);
    assert.equal(check({ arg: 'a', op: 'contains', value: { k: 1, j: 2 } }, { a: [{ j: 2, k: 1 }] }), true);
    assert.equal(check({ arg: 'a', op: 'contains', value: 'x' }, { a: { x: 1 } }), false);
    assert.equal(check({ arg: 'a', op: 'contains', value: 1 }, { a: 12 }), false);
  });

  test('matches: RE2, partial match, anchors and flags work, strings only', () => {
    assert.equal(check({ arg: 's', op: 'matches', value: 'prod' }, { s: 'db-prod-1' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '^prod' }, { s: 'db-prod-1' }), false);
    assert.equal(check({ arg: 's', op: 'matches', value: '^db-' }, { s: 'db-prod-1' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '-1$' }, { s: 'db-prod-1' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '^prod$' }, { s: 'prod' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '^prod$' }, { s: 'prod2' }), false);
    assert.equal(check({ arg: 's', op: 'matches', value: 'PROD' }, { s: 'db-prod-1' }), false);
    assert.equal(check({ arg: 's', op: 'matches', value: '(?i)PROD' }, { s: 'db-prod-1' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '@acme\\.test$' }, { s: 'bob@acme.test' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '@acme\\.test$' }, { s: 'bob@acmeXtest' }), false);
    assert.equal(check({ arg: 's', op: 'matches', value: '\\d{4}' }, { s: 'card 1234' }), true);
    assert.equal(check({ arg: 's', op: 'matches', value: '1' }, { s: 1 }), false);
    assert.equal(check({ arg: 's', op: 'matches', value: '.*' }, { s: ['a'] }), false);
  });

  test('matches: a catastrophic-backtracking pattern runs in linear time', () => {
    const started = performance.now();
    const result = check({ arg: 's', op: 'matches', value: '^(a+)+$' }, { s: 'a'.repeat(5000) + 'b' });
    const elapsed = performance.now() - started;
    assert.equal(result, false);
    assert.ok(elapsed < 2000, `took ${elapsed} ms`);
    assert.equal(check({ arg: 's', op: 'matches', value: '^(a+)+$' }, { s: 'a'.repeat(5000) }), true);
  });

  test('exists: value true or absent asks "present", false asks "absent"', () => {
    assert.equal(check({ arg: 'a', op: 'exists' }, { a: 1 }), true);
    assert.equal(check({ arg: 'a', op: 'exists' }, { a: null }), true);
    assert.equal(check({ arg: 'a', op: 'exists' }, {}), false);
    assert.equal(check({ arg: 'a', op: 'exists', value: true }, { a: false }), true);
    assert.equal(check({ arg: 'a', op: 'exists', value: true }, {}), false);
    assert.equal(check({ arg: 'a', op: 'exists', value: false }, {}), true);
    assert.equal(check({ arg: 'a', op: 'exists', value: false }, { a: 0 }), false);
    assert.equal(check({ arg: 'a.b', op: 'exists' }, { a: { b: 1 } }), true);
    assert.equal(check({ arg: 'a.b', op: 'exists', value: false }, { a: { c: 1 } }), true);
    assert.equal(check({ arg: 'items.0', op: 'exists' }, { items: [] }), false);
  });

  test('an absent argument makes every operator false except exists', () => {
    const cases: Condition[] = [
      { arg: 'a', op: 'eq', value: null },
      { arg: 'a', op: 'ne', value: 1 },
      { arg: 'a', op: 'gt', value: 0 },
      { arg: 'a', op: 'gte', value: 0 },
      { arg: 'a', op: 'lt', value: 0 },
      { arg: 'a', op: 'lte', value: 0 },
      { arg: 'a', op: 'in', value: [null] },
      { arg: 'a', op: 'not_in', value: [1] },
      { arg: 'a', op: 'contains', value: '' },
      { arg: 'a', op: 'matches', value: '' },
      { arg: 'a', op: 'matches', value: '.*' },
    ];
    for (const condition of cases) {
      assert.equal(check(condition, {}), false, condition.op);
      assert.equal(check({ ...condition, arg: 'x.a' }, { x: {} }), false, `nested ${condition.op}`);
      assert.equal(check({ ...condition, arg: 'x.a' }, { x: null }), false, `through null ${condition.op}`);
    }
    assert.equal(check({ arg: 'a', op: 'exists', value: false }, {}), true);
  });

  test('conditions on array elements by index', () => {
    const args = { items: [{ price: 5 }, { price: 700 }] };
    assert.equal(check({ arg: 'items.1.price', op: 'gt', value: 500 }, args), true);
    assert.equal(check({ arg: 'items.0.price', op: 'gt', value: 500 }, args), false);
    assert.equal(check({ arg: 'items.5.price', op: 'lt', value: 500 }, args), false);
  });
});

describe('a value of the wrong type', () => {
  /** What one condition reports for these arguments: its result and the mismatch, if any. */
  const verdictOf = (condition: Condition, args: Record<string, unknown>) => {
    const { result, mismatch } = holds(compileRule(rule({ when: [condition] })).conditions[0]!, args);
    return { result, mismatch };
  };

  test('ordering needs the type of `value`: a number for a number, a string for a string', () => {
    for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
      for (const [actual, type] of [
        ['5000', 'string'],
        [[5000], 'array'],
        [{ value: 5000 }, 'object'],
        [null, 'null'],
        [true, 'boolean'],
      ] as const) {
        assert.deepEqual(
          verdictOf({ arg: 'amount', op, value: 1000 }, { amount: actual }),
          { result: false, mismatch: { type, needs: 'number' } },
          `${JSON.stringify(actual)} ${op} 1000`,
        );
      }
      assert.deepEqual(verdictOf({ arg: 'day', op, value: '2026-01-01' }, { day: 20260101 }), {
        result: false,
        mismatch: { type: 'number', needs: 'string' },
      });
    }
    // The right type compares as before, whatever the result.
    assert.deepEqual(verdictOf({ arg: 'amount', op: 'gt', value: 1000 }, { amount: 5 }), {
      result: false,
      mismatch: undefined,
    });
  });

  test('matches needs a string', () => {
    for (const [actual, type] of [
      [1234, 'number'],
      [['drop table'], 'array'],
      [{ sql: 'drop table' }, 'object'],
      [null, 'null'],
      [false, 'boolean'],
    ] as const) {
      assert.deepEqual(verdictOf({ arg: 's', op: 'matches', value: '.*' }, { s: actual }), {
        result: false,
        mismatch: { type, needs: 'string' },
      });
    }
    assert.equal(verdictOf({ arg: 's', op: 'matches', value: 'x' }, { s: 'abc' }).mismatch, undefined);
  });

  test('contains needs a string or an array for a string, an array otherwise, with items of the type of `value`', () => {
    assert.deepEqual(verdictOf({ arg: 's', op: 'contains', value: 'prod' }, { s: 42 }), {
      result: false,
      mismatch: { type: 'number', needs: 'string or array' },
    });
    assert.deepEqual(verdictOf({ arg: 's', op: 'contains', value: 'prod' }, { s: { host: 'prod' } }), {
      result: false,
      mismatch: { type: 'object', needs: 'string or array' },
    });
    assert.deepEqual(verdictOf({ arg: 'ids', op: 'contains', value: 42 }, { ids: '42' }), {
      result: false,
      mismatch: { type: 'string', needs: 'array' },
    });
    // An item of another type than `value`: the first one is named by its index.
    assert.deepEqual(verdictOf({ arg: 'ids', op: 'contains', value: 42 }, { ids: [7, '42', null] }), {
      result: false,
      mismatch: { type: 'string', needs: 'number', item: 1 },
    });
    assert.deepEqual(verdictOf({ arg: 'roles', op: 'contains', value: 'admin' }, { roles: [['admin']] }), {
      result: false,
      mismatch: { type: 'array', needs: 'string', item: 0 },
    });
    // An item equal to `value` makes the condition true, whatever the other items are.
    assert.deepEqual(verdictOf({ arg: 'ids', op: 'contains', value: 42 }, { ids: ['x', 42] }), {
      result: true,
      mismatch: undefined,
    });
    // Items of the right type that differ: false, no mismatch; so is a string without the substring.
    assert.equal(verdictOf({ arg: 'ids', op: 'contains', value: 42 }, { ids: [1, 2] }).mismatch, undefined);
    assert.equal(verdictOf({ arg: 'ids', op: 'contains', value: 42 }, { ids: [] }).mismatch, undefined);
    assert.equal(verdictOf({ arg: 's', op: 'contains', value: 'x' }, { s: 'abc' }).mismatch, undefined);
  });

  test('eq, ne, in, not_in and exists take any type; a missing argument is no mismatch', () => {
    for (const condition of [
      { arg: 'a', op: 'eq', value: 1 },
      { arg: 'a', op: 'ne', value: 1 },
      { arg: 'a', op: 'in', value: [1] },
      { arg: 'a', op: 'not_in', value: ['1'] },
      { arg: 'a', op: 'exists', value: false },
    ] as Condition[]) {
      assert.equal(verdictOf(condition, { a: '1' }).mismatch, undefined, condition.op);
    }
    for (const op of ['gt', 'gte', 'lt', 'lte', 'matches', 'contains'] as const) {
      const value = op === 'matches' || op === 'contains' ? 'x' : 1;
      assert.deepEqual(verdictOf({ arg: 'a.b', op, value }, {}), { result: false, mismatch: undefined });
      assert.deepEqual(verdictOf({ arg: 'a.b', op, value }, { a: 'text' }), {
        result: false,
        mismatch: undefined,
      });
    }
  });

  test('the explanation in words names the argument, or the array item, and the types', () => {
    assert.equal(
      describeTypeMismatch({ arg: 'amount', type: 'string', needs: 'number' }),
      'amount is a string, not a number',
    );
    assert.equal(
      describeTypeMismatch({ arg: 'ids', type: 'object', needs: 'array', item: 2 }),
      'ids.2 is an object, not an array',
    );
    assert.equal(
      describeTypeMismatch({ arg: 's', type: 'null', needs: 'string or array' }),
      's is null, not a string or array',
    );
  });

  test('a mismatch makes an approval or deny rule apply and never an allow rule; the facts say which', () => {
    const when: Condition[] = [
      { arg: 'payment.amount', op: 'gt', value: 1000 },
      { arg: 'currency', op: 'eq', value: 'EUR' },
    ];
    const rules = ['allow', 'approval', 'deny'].map((effect) =>
      compileRule(rule({ name: effect, effect: effect as RuleDefinition['effect'], when })),
    );
    const matches = matchRules(rules, call({ arguments: { payment: { amount: '5000' }, currency: 'EUR' } }));
    assert.deepEqual(
      matches.map((m) => m.rule.name),
      ['approval', 'deny'],
    );
    assert.deepEqual(matches[0]!.conditions, [
      {
        arg: 'payment.amount',
        op: 'gt',
        value: 1000,
        actual: '5000',
        type_mismatch: { type: 'string', needs: 'number' },
      },
      { arg: 'currency', op: 'eq', value: 'EUR', actual: 'EUR' },
    ]);
    // Every other condition must still hold.
    assert.deepEqual(
      matchRules(rules, call({ arguments: { payment: { amount: '5000' }, currency: 'USD' } })),
      [],
    );
    // An allow rule on a small amount does not open for a quoted one.
    const small = compileRule(rule({ effect: 'allow', when: [{ arg: 'amount', op: 'lt', value: 100 }] }));
    assert.deepEqual(matchRules([small], call({ arguments: { amount: '5' } })), []);
    assert.equal(matchRules([small], call({ arguments: { amount: 5 } })).length, 1);
  });
});

describe('compilePattern', () => {
  test('accepts RE2 syntax', () => {
    assert.ok(compilePattern('(?i)^[a-z]+\\d*$').matcher('ABC12').find());
  });

  test('throws on what RE2 does not support', () => {
    assert.throws(() => compilePattern('(a)\\1'));
    assert.throws(() => compilePattern('(?=a)b'));
    assert.throws(() => compilePattern('(unclosed'));
  });

  test('compileRule rejects a rule whose matches pattern is not RE2', () => {
    assert.throws(() => compileRule(rule({ when: [{ arg: 's', op: 'matches', value: '(a)\\1' }] })));
  });
});

describe('facts a match reports', () => {
  test('each condition with the value it compared', () => {
    const r = rule({
      name: 'big',
      when: [
        { arg: 'amount', op: 'gt', value: 1000 },
        { arg: 'items.0.sku', op: 'in', value: ['A', 'B'] },
        { arg: 'note', op: 'exists', value: false },
        { arg: 'currency', op: 'exists' },
      ],
    });
    const [match, ...rest] = matchRules(
      [compileRule(r)],
      call({ arguments: { amount: 1500, currency: 'EUR', items: [{ sku: 'A' }] } }),
    );
    assert.equal(rest.length, 0);
    assert.ok(match);
    assert.equal(match.rule, r);
    assert.equal(match.scope, null);
    assert.deepEqual(match.conditions, [
      { arg: 'amount', op: 'gt', value: 1000, actual: 1500 },
      { arg: 'items.0.sku', op: 'in', value: ['A', 'B'], actual: 'A' },
      { arg: 'note', op: 'exists', value: false, actual: null },
      { arg: 'currency', op: 'exists', value: null, actual: null },
    ]);
  });

  test('a rule without conditions reports none', () => {
    const [match] = matchRules([compileRule(rule())], call());
    assert.deepEqual(match?.conditions, []);
    assert.equal(match?.scope, null);
  });

  test('a frequency rule reports the counter to ask, per `by` and `per`', () => {
    const c = call({ connection: 'Files', toolName: 'files.delete', agentId: 'bot-1' });
    const scopeOf = (by: 'tool' | 'agent' | 'tool_and_agent', per: 'minute' | 'hour' | 'day') =>
      matchRules([compileRule(rule({ frequency: { more_than: 20, by, per } }))], c)[0]?.scope;
    assert.deepEqual(scopeOf('tool', 'hour'), {
      connection: 'Files',
      toolName: 'files.delete',
      agentId: null,
      windowMs: 3_600_000,
    });
    assert.deepEqual(scopeOf('agent', 'minute'), {
      connection: 'Files',
      toolName: null,
      agentId: 'bot-1',
      windowMs: 60_000,
    });
    assert.deepEqual(scopeOf('tool_and_agent', 'day'), {
      connection: 'Files',
      toolName: 'files.delete',
      agentId: 'bot-1',
      windowMs: 86_400_000,
    });
    assert.deepEqual(PERIOD_MS, { minute: 60_000, hour: 3_600_000, day: 86_400_000 });
  });

  test('a frequency rule still has to match tool, agent and conditions', () => {
    const r = rule({
      tool: 'files.*',
      when: [{ arg: 'force', op: 'eq', value: true }],
      frequency: { more_than: 1, per: 'hour', by: 'tool' },
    });
    assert.equal(
      matchRules([compileRule(r)], call({ toolName: 'files.delete', arguments: { force: false } })).length,
      0,
    );
    assert.equal(
      matchRules([compileRule(r)], call({ toolName: 'payments.x', arguments: { force: true } })).length,
      0,
    );
    assert.equal(
      matchRules([compileRule(r)], call({ toolName: 'files.delete', arguments: { force: true } })).length,
      1,
    );
  });
});

describe('scopeKey', () => {
  const key = (by: 'tool' | 'agent' | 'tool_and_agent', per: 'minute' | 'hour' | 'day', c: Call) =>
    scopeKey(frequencyScope({ more_than: 1, by, per }, c));
  const base = call({ connection: 'SDK', toolName: 'payments.create', agentId: 'a1' });

  test('rules that count the same calls share one key, whatever their threshold or name', () => {
    const rules = [
      rule({ name: 'x', tool: 'payments.*', frequency: { more_than: 5, per: 'hour', by: 'tool' } }),
      rule({ name: 'y', tool: '*', agent: '*', frequency: { more_than: 50, per: 'hour', by: 'tool' } }),
    ];
    const matches = matchRules(rules.map(compileRule), base);
    assert.equal(matches.length, 2);
    assert.equal(scopeKey(matches[0]!.scope!), scopeKey(matches[1]!.scope!));
  });

  test('by tool: same tool on the same connection, any agent', () => {
    assert.equal(key('tool', 'hour', base), key('tool', 'hour', { ...base, agentId: 'a2' }));
    assert.notEqual(key('tool', 'hour', base), key('tool', 'hour', { ...base, toolName: 'payments.refund' }));
    assert.notEqual(key('tool', 'hour', base), key('tool', 'hour', { ...base, connection: 'Files' }));
  });

  test('by agent: same agent, any tool on any connection', () => {
    assert.equal(key('agent', 'hour', base), key('agent', 'hour', { ...base, toolName: 'files.read' }));
    assert.equal(
      key('agent', 'hour', base),
      key('agent', 'hour', { ...base, connection: 'Files', toolName: 'x' }),
    );
    assert.notEqual(key('agent', 'hour', base), key('agent', 'hour', { ...base, agentId: 'a2' }));
  });

  test('by tool_and_agent: both must be the same', () => {
    assert.equal(
      key('tool_and_agent', 'day', base),
      key('tool_and_agent', 'day', { ...base, arguments: { x: 1 } }),
    );
    assert.notEqual(
      key('tool_and_agent', 'day', base),
      key('tool_and_agent', 'day', { ...base, agentId: 'a2' }),
    );
    assert.notEqual(
      key('tool_and_agent', 'day', base),
      key('tool_and_agent', 'day', { ...base, toolName: 'y' }),
    );
    assert.notEqual(
      key('tool_and_agent', 'day', base),
      key('tool_and_agent', 'day', { ...base, connection: 'Files' }),
    );
  });

  test('different windows or different `by` never share a key', () => {
    const all = new Set<string>();
    for (const by of ['tool', 'agent', 'tool_and_agent'] as const) {
      for (const per of ['minute', 'hour', 'day'] as const) all.add(key(by, per, base));
    }
    assert.equal(all.size, 9);
  });

  test('no collision between a tool name and an agent id that spell the same', () => {
    const c = call({ toolName: 'same', agentId: 'same' });
    assert.notEqual(key('tool', 'hour', c), key('agent', 'hour', c));
  });

  test('an agent whose id is literally `*` does not share the counter of "any agent"', () => {
    const c = call({ agentId: '*' });
    assert.notEqual(key('tool_and_agent', 'hour', c), key('tool', 'hour', c));
  });
});

test('a glob with many stars against a long name stays cheap (no exponential backtracking)', () => {
  const glob = compileGlob('*a*a*a*a*a*a*a*a*a*a*b');
  const started = performance.now();
  assert.equal(glob('a'.repeat(200)), false);
  assert.equal(glob(`${'a'.repeat(199)}b`), true);
  assert.ok(performance.now() - started < 500);
});

test('a rule set answers the same calls alike however often it is asked: the rules kept per tool, and the answers a pattern keeps', () => {
  const rules = [
    compileRule({ name: 'exact', tool: 'payments.send', effect: 'approval' }),
    compileRule({ name: 'other connection', connection: 'files', tool: 'payments.*', effect: 'deny' }),
    compileRule({
      name: 'pattern',
      tool: 'payments.*',
      when: [{ arg: 'memo', op: 'matches', value: '^INV-[0-9]+$' }],
      effect: 'deny',
    }),
  ];
  const names = (memo: string, toolName = 'payments.send', connection = 'SDK') =>
    matchRules(rules, call({ toolName, connection, arguments: { memo } })).map(({ rule }) => rule.name);
  // More texts than a pattern keeps answers for, each asked three times, on two tools and connections.
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 40; i++) {
      assert.deepEqual(names(`INV-${i}`), ['exact', 'pattern']);
      assert.deepEqual(names(`inv-${i}`), ['exact']);
      assert.deepEqual(names(`INV-${i}`, 'payments.refund'), ['pattern']);
      assert.deepEqual(names(`INV-${i}`, 'payments.refund', 'files'), ['other connection', 'pattern']);
    }
  }
});

test('a rule set answers calls to one tool alike whatever arguments each names, and in whatever order: the rules kept per shape of arguments', () => {
  const rules = [
    compileRule({ name: 'always', tool: 'payments.send', effect: 'allow' }),
    compileRule({
      name: 'no tags',
      tool: 'payments.*',
      when: [{ arg: 'tags', op: 'exists', value: false }],
      effect: 'allow',
    }),
    compileRule({
      name: 'ticket',
      tool: 'payments.*',
      when: [{ arg: 'ticket', op: 'exists' }],
      effect: 'approval',
    }),
    compileRule({
      name: 'domain',
      tool: 'payments.*',
      when: [{ arg: 'to.domain', op: 'eq', value: 'acme.test' }],
      effect: 'approval',
    }),
    compileRule({
      name: 'large, fail closed',
      tool: 'payments.*',
      when: [
        { arg: 'amount', op: 'gt', value: 100 },
        { arg: 'currency', op: 'ne', value: 'JPY' },
      ],
      effect: 'deny',
    }),
    compileRule({
      name: 'not inherited',
      tool: 'payments.*',
      when: [{ arg: 'constructor', op: 'exists' }],
      effect: 'deny',
    }),
  ];
  const names = (args: Record<string, unknown>) =>
    matchRules(rules, call({ toolName: 'payments.send', arguments: args })).map(({ rule }) => rule.name);
  const cases: [Record<string, unknown>, string[]][] = [
    [{}, ['always', 'no tags']],
    [{ tags: [] }, ['always']],
    [{ ticket: 'T-1', tags: ['x'] }, ['always', 'ticket']],
    [{ tags: ['x'], ticket: 'T-1' }, ['always', 'ticket']],
    [{ to: { domain: 'acme.test' } }, ['always', 'no tags', 'domain']],
    [{ to: 'acme.test' }, ['always', 'no tags']],
    [{ amount: 500, currency: 'EUR' }, ['always', 'no tags', 'large, fail closed']],
    [{ currency: 'EUR', amount: '500' }, ['always', 'no tags', 'large, fail closed']],
    [{ amount: 500 }, ['always', 'no tags']],
    [{ currency: 'EUR' }, ['always', 'no tags']],
    [JSON.parse('{"__proto__": {"ticket": 1}, "constructor": 1}'), ['always', 'no tags', 'not inherited']],
  ];
  for (let round = 0; round < 3; round++)
    for (const [args, expected] of round === 1 ? [...cases].reverse() : cases)
      assert.deepEqual(names(args), expected, JSON.stringify(args));
});

test('a match describes the conditions it saw, as the rule compared them', () => {
  const [match] = matchRules(
    [
      compileRule({
        name: 'r',
        tool: '*',
        when: [
          { arg: 'amount', op: 'gte', value: 100 },
          { arg: 'memo', op: 'exists', value: false },
        ],
        effect: 'approval',
      }),
    ],
    call({ arguments: { amount: '150' } }),
  );
  const seen = [
    {
      arg: 'amount',
      op: 'gte',
      value: 100,
      actual: '150',
      type_mismatch: { type: 'string', needs: 'number' },
    },
    { arg: 'memo', op: 'exists', value: false, actual: null },
  ];
  assert.deepEqual(match?.conditions, seen);
  assert.equal(match?.conditions, match?.conditions, 'described once');
});

test('calls naming ever new arguments, as many and as long as a body holds, do not pile up in the rule set', () => {
  // The shapes a set keeps are told by the names its conditions read: an agent's own names add nothing.
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  const rules = [rule({ name: 'big', when: [{ arg: 'amount', op: 'gt', value: 100 }] })].map(compileRule);
  const ask = (i: number) => {
    const args: Record<string, unknown> = { amount: 500 };
    for (let n = 0; n < 200; n++) args[`${String(i).padStart(6, '0')}-${n}-${'x'.repeat(500)}`] = n;
    return matchRules(rules, call({ arguments: args })).map((m) => m.rule.name);
  };
  assert.deepEqual(ask(0), ['big']);
  collect();
  const before = process.memoryUsage().heapUsed;
  // 900 calls of 100 KB of names each (a set keeps at most 1,000 shapes): kept by their names, 90 MB.
  for (let i = 1; i <= 900; i++) assert.deepEqual(ask(i), ['big']);
  collect();
  const grown = process.memoryUsage().heapUsed - before;
  assert.ok(grown < 10 * 2 ** 20, `the heap grew by ${Math.round(grown / 2 ** 20)} MiB`);
});
