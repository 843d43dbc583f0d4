import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { type Classification, type Counts, type Outcome, decide } from './policy.ts';
import {
  type Call,
  type Condition,
  type CountBy,
  type Period,
  type RuleDefinition,
  type RuleMatch,
  compileRule,
  matchRules,
  scopeKey,
} from './rules.ts';

const CALL: Call = {
  connection: 'SDK',
  toolName: 'payments.create',
  agentId: 'agent-1',
  arguments: { amount: 1500, currency: 'EUR' },
};

/** Every test goes through the real matcher: rules → compiled → matched against CALL. */
const matchesFor = (rules: RuleDefinition[], call: Call = CALL): RuleMatch[] => {
  const matches = matchRules(rules.map(compileRule), call);
  return matches;
};

const rule = (name: string, overrides: Partial<RuleDefinition> = {}): RuleDefinition => ({
  name,
  tool: 'payments.*',
  effect: 'approval',
  ...overrides,
});

/** The parts of an outcome that say what happens to the call. */
const verdict = (outcome: Outcome) => ({
  effect: outcome.effect,
  ruleName: outcome.ruleName,
  approvalsRequired: outcome.approvalsRequired,
  timeoutMinutes: outcome.timeoutMinutes,
  approvers: outcome.approvers,
  reason: outcome.reason,
});

describe('classification alone', () => {
  test('a tool never seen (null) or seen and unclassified (new) needs one admin approval, default deadline', () => {
    for (const classification of [null, 'new'] as const) {
      const outcome = decide({ classification, matches: [] });
      assert.equal(outcome.effect, 'approval');
      assert.deepEqual(outcome.approvers, ['role:admin']);
      assert.equal(outcome.approvalsRequired, 1);
      assert.equal(outcome.timeoutMinutes, 240);
      assert.equal(outcome.reason, null);
      assert.equal(outcome.facts.classification, 'new');
      assert.equal(outcome.facts.first_seen, classification === null);
      assert.deepEqual(outcome.facts.matched_rules, []);
    }
  });

  test('allow', () => {
    const outcome = decide({ classification: 'allow', matches: [] });
    assert.equal(outcome.effect, 'allow');
    assert.equal(outcome.reason, null);
    assert.deepEqual(outcome.approvers, []);
    assert.equal(outcome.approvalsRequired, 0);
    assert.equal(outcome.facts.classification, 'allow');
    assert.equal(outcome.facts.first_seen, false);
  });

  test('approval: one admin, 240 minutes', () => {
    const outcome = decide({ classification: 'approval', matches: [] });
    assert.deepEqual(verdict(outcome), {
      effect: 'approval',
      ruleName: 'Tool classified approval',
      approvalsRequired: 1,
      timeoutMinutes: 240,
      approvers: ['role:admin'],
      reason: null,
    });
  });

  test('deny, with the default reason', () => {
    const outcome = decide({ classification: 'deny', matches: [] });
    assert.equal(outcome.effect, 'deny');
    assert.equal(outcome.ruleName, 'Tool classified deny');
    assert.equal(outcome.reason, 'Denied by rule: Tool classified deny');
    assert.deepEqual(outcome.approvers, []);
  });
});

describe('explicit rules', () => {
  test('deny beats approval beats allow', () => {
    const allow = rule('allow it', { effect: 'allow' });
    const approval = rule('approve it', { effect: 'approval' });
    const deny = rule('deny it', { effect: 'deny' });
    for (const classification of ['allow', 'approval', 'new', null] as const) {
      assert.equal(
        decide({ classification, matches: matchesFor([allow, approval, deny]) }).ruleName,
        'deny it',
      );
      assert.equal(decide({ classification, matches: matchesFor([deny, allow]) }).ruleName, 'deny it');
      assert.equal(decide({ classification, matches: matchesFor([allow, approval]) }).ruleName, 'approve it');
      assert.equal(decide({ classification, matches: matchesFor([approval, allow]) }).effect, 'approval');
    }
    assert.equal(decide({ classification: 'allow', matches: matchesFor([allow]) }).effect, 'allow');
  });

  test('an allow rule does not override a stricter classification', () => {
    const allow = rule('allow it', { effect: 'allow' });
    assert.equal(decide({ classification: 'approval', matches: matchesFor([allow]) }).effect, 'approval');
    assert.equal(decide({ classification: 'deny', matches: matchesFor([allow]) }).effect, 'deny');
    assert.equal(decide({ classification: 'new', matches: matchesFor([allow]) }).effect, 'approval');
    assert.equal(decide({ classification: null, matches: matchesFor([allow]) }).effect, 'approval');
  });

  test('a deny rule beats an allow classification', () => {
    const outcome = decide({
      classification: 'allow',
      matches: matchesFor([rule('No payments', { effect: 'deny' })]),
    });
    assert.equal(outcome.effect, 'deny');
    assert.equal(outcome.ruleName, 'No payments');
  });

  test("a deny rule's own reason is used; the default is `Denied by rule: <name>`", () => {
    const withReason = rule('Block large payments', {
      effect: 'deny',
      reason: 'Payments over 1000 are blocked',
    });
    assert.equal(
      decide({ classification: 'allow', matches: matchesFor([withReason]) }).reason,
      'Payments over 1000 are blocked',
    );
    for (const reason of [undefined, null]) {
      const plain = rule('Block large payments', { effect: 'deny', reason });
      assert.equal(
        decide({ classification: 'allow', matches: matchesFor([plain]) }).reason,
        'Denied by rule: Block large payments',
      );
    }
  });

  test('a reason on an allow or approval rule is not shown', () => {
    const approval = rule('a', { effect: 'approval', reason: 'why' });
    assert.equal(decide({ classification: 'allow', matches: matchesFor([approval]) }).reason, null);
    const allow = rule('b', { effect: 'allow', reason: 'why' });
    assert.equal(decide({ classification: 'allow', matches: matchesFor([allow]) }).reason, null);
  });

  test('among approval rules: most approvals required, then shortest deadline, then name', () => {
    const decideWith = (rules: RuleDefinition[]) => {
      const forward = decide({ classification: 'approval', matches: matchesFor(rules) });
      const backward = decide({ classification: 'approval', matches: matchesFor([...rules].reverse()) });
      assert.deepEqual(verdict(forward), verdict(backward));
      return forward;
    };
    const two = rule('two approvers', {
      approvals_required: 2,
      timeout_minutes: 600,
      approvers: ['group:finance'],
    });
    const oneFast = rule('one fast', { approvals_required: 1, timeout_minutes: 5 });
    assert.equal(decideWith([oneFast, two]).ruleName, 'two approvers');
    assert.equal(decideWith([oneFast, two]).approvalsRequired, 2);
    assert.equal(decideWith([oneFast, two]).timeoutMinutes, 600);

    const slow = rule('slow', { approvals_required: 2, timeout_minutes: 120 });
    const fast = rule('fast', { approvals_required: 2, timeout_minutes: 60 });
    assert.equal(decideWith([slow, fast]).ruleName, 'fast');
    assert.equal(decideWith([slow, fast]).timeoutMinutes, 60);

    const b = rule('B rule', { approvals_required: 3, timeout_minutes: 60, approvers: ['bob@acme.test'] });
    const a = rule('A rule', { approvals_required: 3, timeout_minutes: 60, approvers: ['alice@acme.test'] });
    assert.equal(decideWith([b, a]).ruleName, 'A rule');
    assert.deepEqual(decideWith([b, a]).approvers, ['alice@acme.test']);

    // A rule without timeout_minutes has the default deadline, 240.
    const unset = rule('unset', { approvals_required: 1 });
    const longer = rule('longer', { approvals_required: 1, timeout_minutes: 300 });
    assert.equal(decideWith([longer, unset]).ruleName, 'unset');
    assert.equal(decideWith([longer, unset]).timeoutMinutes, 240);
  });

  test("a matching approval rule overrides the classification's default approvers and deadline", () => {
    const finance = rule('Finance approves payments', {
      approvers: ['group:finance'],
      approvals_required: 1,
      timeout_minutes: 480,
    });
    const outcome = decide({ classification: 'approval', matches: matchesFor([finance]) });
    assert.deepEqual(verdict(outcome), {
      effect: 'approval',
      ruleName: 'Finance approves payments',
      approvalsRequired: 1,
      timeoutMinutes: 480,
      approvers: ['group:finance'],
      reason: null,
    });
    // The same for an allow classification: the rule asks for approval.
    assert.deepEqual(
      verdict(decide({ classification: 'allow', matches: matchesFor([finance]) })),
      verdict(outcome),
    );
  });

  test('a tool nobody classified has the workspace admins among its approvers even when an approval rule matches', () => {
    const finance = rule('Finance approves payments', {
      approvers: ['group:finance'],
      timeout_minutes: 480,
    });
    for (const classification of [null, 'new'] as const) {
      const outcome = decide({ classification, matches: matchesFor([finance]) });
      assert.equal(outcome.effect, 'approval');
      assert.ok(outcome.approvers.includes('role:admin'), JSON.stringify(outcome.approvers));
    }
  });

  test('an approval rule without approvers is approved by the admins', () => {
    for (const approvers of [undefined, []]) {
      const outcome = decide({ classification: 'allow', matches: matchesFor([rule('r', { approvers })]) });
      assert.deepEqual(outcome.approvers, ['role:admin']);
      assert.equal(outcome.approvalsRequired, 1);
      assert.equal(outcome.timeoutMinutes, 240);
    }
  });

  test('facts: matched rules, classification, first_seen and the conditions of the deciding rule', () => {
    const big = rule('Large payments', {
      effect: 'approval',
      when: [{ arg: 'amount', op: 'gt', value: 1000 }],
      approvals_required: 2,
    });
    const eur = rule('Euro payments', {
      effect: 'allow',
      when: [{ arg: 'currency', op: 'eq', value: 'EUR' }],
    });
    const small = rule('Small payments', {
      effect: 'allow',
      when: [{ arg: 'amount', op: 'lt', value: 100 }],
    });
    const outcome = decide({ classification: null, matches: matchesFor([eur, big, small]) });
    assert.equal(outcome.ruleName, 'Large payments');
    assert.deepEqual(outcome.facts, {
      conditions: [{ arg: 'amount', op: 'gt', value: 1000, actual: 1500 }],
      classification: 'new',
      first_seen: true,
      matched_rules: ['Euro payments', 'Large payments'],
    });
    const byClassification = decide({ classification: 'deny', matches: matchesFor([eur]) });
    assert.deepEqual(byClassification.facts, {
      classification: 'deny',
      first_seen: false,
      matched_rules: ['Euro payments'],
    });
  });
});

describe('frequency', () => {
  const busy = rule('Busy payments', {
    effect: 'deny',
    frequency: { more_than: 20, per: 'hour', by: 'tool' },
  });

  const countsFor = (matches: RuleMatch[], count: number): Counts =>
    new Map(matches.filter((m) => m.scope).map((m) => [scopeKey(m.scope!), count]));

  test('a frequency rule is ignored up to its threshold and applies from the next call', () => {
    const matches = matchesFor([busy]);
    assert.equal(matches.length, 1);
    for (const count of [0, 1, 20]) {
      const outcome = decide({ classification: 'allow', matches, counts: countsFor(matches, count) });
      assert.equal(outcome.effect, 'allow', `count ${count}`);
      assert.deepEqual(outcome.facts.matched_rules, [], `count ${count}`);
    }
    const outcome = decide({ classification: 'allow', matches, counts: countsFor(matches, 21) });
    assert.equal(outcome.effect, 'deny');
    assert.equal(outcome.ruleName, 'Busy payments');
    assert.equal(outcome.reason, 'Denied by rule: Busy payments');
    assert.deepEqual(outcome.facts.frequency, { more_than: 20, per: 'hour', by: 'tool', count: 21 });
    assert.deepEqual(outcome.facts.matched_rules, ['Busy payments']);
  });

  test('without counts, or with a count for another scope, a frequency rule does not apply', () => {
    const matches = matchesFor([busy]);
    assert.equal(decide({ classification: 'allow', matches }).effect, 'allow');
    const other = new Map([
      [scopeKey({ connection: 'SDK', toolName: 'other', agentId: null, windowMs: 3_600_000 }), 99],
    ]);
    assert.equal(decide({ classification: 'allow', matches, counts: other }).effect, 'allow');
  });

  test('frequency and conditions together', () => {
    const r = rule('Many large payments', {
      effect: 'approval',
      when: [{ arg: 'amount', op: 'gte', value: 1000 }],
      frequency: { more_than: 3, per: 'day', by: 'tool_and_agent' },
      approvals_required: 2,
    });
    const matches = matchesFor([r]);
    const outcome = decide({ classification: 'allow', matches, counts: countsFor(matches, 4) });
    assert.equal(outcome.effect, 'approval');
    assert.equal(outcome.approvalsRequired, 2);
    assert.deepEqual(outcome.facts.conditions, [{ arg: 'amount', op: 'gte', value: 1000, actual: 1500 }]);
    assert.deepEqual(outcome.facts.frequency, { more_than: 3, per: 'day', by: 'tool_and_agent', count: 4 });
    assert.equal(decide({ classification: 'allow', matches, counts: countsFor(matches, 3) }).effect, 'allow');
  });
});

describe('properties', () => {
  const BYS: CountBy[] = ['tool', 'agent', 'tool_and_agent'];
  const PERS: Period[] = ['minute', 'hour', 'day'];
  const CLASSIFICATIONS: (Classification | null)[] = [null, 'new', 'allow', 'approval', 'deny'];

  // Every glob here matches CALL's tool; conditions may or may not hold for CALL's arguments.
  const ruleBody = fc.record(
    {
      tool: fc.constantFrom(
        'payments.*',
        '*',
        'payments.create',
        'pay?ents.create',
        '*.create',
        'payments.c*e',
      ),
      effect: fc.constantFrom('allow', 'approval', 'deny'),
      approvals_required: fc.integer({ min: 1, max: 5 }),
      timeout_minutes: fc.integer({ min: 1, max: 10_000 }),
      approvers: fc.uniqueArray(
        fc.constantFrom('role:admin', 'group:finance', 'alice@acme.test', 'bob@acme.test'),
        {
          maxLength: 3,
        },
      ),
      reason: fc.option(fc.string({ minLength: 1, maxLength: 20 }), { nil: null }),
      frequency: fc.record({
        more_than: fc.integer({ min: 0, max: 30 }),
        per: fc.constantFrom(...PERS),
        by: fc.constantFrom(...BYS),
      }),
      when: fc.constantFrom(
        [{ arg: 'amount', op: 'gt', value: 1000 }],
        [{ arg: 'amount', op: 'lt', value: 1000 }],
        [{ arg: 'currency', op: 'in', value: ['EUR', 'USD'] }],
        [{ arg: 'missing', op: 'exists', value: false }],
        [{ arg: 'missing', op: 'eq', value: 1 }],
      ),
    },
    { requiredKeys: ['tool', 'effect'] },
  ) as fc.Arbitrary<Omit<RuleDefinition, 'name'>>;

  // Names never collide with each other nor with the classification's own rule names.
  const rulesArb = fc
    .uniqueArray(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 8 })
    .chain((names) =>
      fc.tuple(
        ...names.map((name) => ruleBody.map((body): RuleDefinition => ({ ...body, name: `rule ${name}` }))),
      ),
    );

  /** One count per frequency scope, this call included. */
  const countsArb = fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 9, maxLength: 9 });
  const countsOf = (matches: RuleMatch[], draws: number[]): Counts => {
    const keys = [...new Set(matches.flatMap((m) => (m.scope ? [scopeKey(m.scope)] : [])))].sort();
    return new Map(keys.map((key, i) => [key, draws[i % draws.length]!]));
  };

  const scenario = fc.record({
    classification: fc.constantFrom(...CLASSIFICATIONS),
    rules: rulesArb,
    draws: countsArb,
  });

  const extraRule = (effect: 'allow' | 'deny'): fc.Arbitrary<RuleDefinition> =>
    fc.record(
      {
        name: fc.constant(`extra ${effect}`),
        effect: fc.constant(effect),
        tool: fc.constantFrom('payments.*', '*', 'payments.create'),
        timeout_minutes: fc.integer({ min: 1, max: 10_000 }),
        reason: fc.option(fc.string({ minLength: 1, maxLength: 20 }), { nil: null }),
        when: fc.constantFrom<Condition[]>([], [{ arg: 'amount', op: 'gt', value: 1000 }]),
      },
      { requiredKeys: ['name', 'effect', 'tool', 'when'] },
    );

  const setup = ({
    classification,
    rules,
    draws,
  }: {
    classification: Classification | null;
    rules: RuleDefinition[];
    draws: number[];
  }) => {
    const matches = matchesFor(rules);
    const counts = countsOf(matches, draws);
    const applied = matches.filter(
      (m) => !m.rule.frequency || (counts.get(scopeKey(m.scope!)) ?? 0) > m.rule.frequency.more_than,
    );
    return { matches, counts, applied, outcome: decide({ classification, matches, counts }) };
  };

  test('(a) the outcome does not depend on the order of the matches', () => {
    fc.assert(
      fc.property(
        scenario.chain((s) => {
          const n = matchesFor(s.rules).length;
          const indexes = [...Array(n).keys()];
          return fc.tuple(fc.constant(s), fc.shuffledSubarray(indexes, { minLength: n, maxLength: n }));
        }),
        ([s, order]) => {
          const { matches, counts, outcome } = setup(s);
          const shuffled = order.map((i) => matches[i]!);
          const again = decide({ classification: s.classification, matches: shuffled, counts });
          assert.deepEqual(verdict(again), verdict(outcome));
          assert.deepEqual(again.facts, outcome.facts);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('(b) with an extra matching deny rule the effect is always deny', () => {
    fc.assert(
      fc.property(scenario, extraRule('deny'), (s, deny) => {
        const { matches, counts, outcome } = setup(s);
        const extra = matchesFor([deny]);
        assert.equal(extra.length, 1);
        for (const all of [
          [...matches, ...extra],
          [...extra, ...matches],
        ]) {
          const denied = decide({ classification: s.classification, matches: all, counts });
          assert.equal(denied.effect, 'deny');
          assert.ok(denied.reason);
          assert.deepEqual(denied.approvers, []);
          if (outcome.effect === 'deny') assert.equal(denied.effect, 'deny');
        }
      }),
      { numRuns: 500 },
    );
  });

  test('(c) a tool that is new or never seen is never allowed, whatever rules match', () => {
    fc.assert(
      fc.property(scenario, fc.constantFrom(null, 'new' as const), (s, classification) => {
        const { outcome } = setup({ ...s, classification });
        assert.notEqual(outcome.effect, 'allow');
        assert.equal(outcome.facts.classification, 'new');
        assert.equal(outcome.facts.first_seen, classification === null);
      }),
      { numRuns: 500 },
    );
  });

  test('(d) adding a matching allow rule never makes an outcome less strict', () => {
    fc.assert(
      fc.property(scenario, extraRule('allow'), (s, allow) => {
        const { matches, counts, outcome } = setup(s);
        const extra = matchesFor([allow]);
        assert.equal(extra.length, 1);
        const after = decide({ classification: s.classification, matches: [...extra, ...matches], counts });
        assert.equal(after.effect, outcome.effect);
        if (outcome.effect !== 'allow') assert.deepEqual(verdict(after), verdict(outcome));
      }),
      { numRuns: 500 },
    );
  });

  test('(e) allow only if the classification is allow or an allow rule applied, and no deny or approval applied', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { applied, outcome } = setup(s);
        const classification = s.classification ?? 'new';
        const strict =
          applied.some((m) => m.rule.effect !== 'allow') ||
          ['new', 'approval', 'deny'].includes(classification);
        const allowing = classification === 'allow' || applied.some((m) => m.rule.effect === 'allow');
        assert.equal(outcome.effect === 'allow', allowing && !strict);
      }),
      { numRuns: 500 },
    );
  });

  test('(g) an amount of the wrong type is decided at least as strictly as any number would be', () => {
    const STRICTNESS = { allow: 0, approval: 1, deny: 2 };
    const decideFor = (
      s: { classification: Classification | null; rules: RuleDefinition[] },
      amount: unknown,
    ) =>
      decide({
        classification: s.classification,
        // No counts: frequency rules stay out, so only the conditions differ between the calls.
        matches: matchesFor(s.rules, { ...CALL, arguments: { ...CALL.arguments, amount } }),
      }).effect;
    fc.assert(
      fc.property(
        scenario,
        fc.constantFrom('5000', '5', [5000], { value: 5000 }, null, true),
        fc.constantFrom(5, 1000, 5000),
        (s, wrong, number) => {
          assert.ok(STRICTNESS[decideFor(s, wrong)] >= STRICTNESS[decideFor(s, number)]);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('(f) the outcome is the one the precedence rules name', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { applied, outcome } = setup(s);
        const classification = s.classification ?? 'new';
        assert.deepEqual(
          [...(outcome.facts.matched_rules as string[])],
          applied.map((m) => m.rule.name).sort(),
        );
        const denies = applied.filter((m) => m.rule.effect === 'deny');
        const approvals = applied.filter((m) => m.rule.effect === 'approval');
        if (denies.length > 0 || classification === 'deny') {
          assert.equal(outcome.effect, 'deny');
          // An explicit deny rule is reported before the classification, the first by name.
          const names = denies.map((m) => m.rule.name).sort();
          assert.equal(outcome.ruleName, names[0] ?? 'Tool classified deny');
          const decider = denies.find((m) => m.rule.name === outcome.ruleName);
          assert.equal(outcome.reason, decider?.rule.reason || `Denied by rule: ${outcome.ruleName}`);
        } else if (approvals.length > 0) {
          const best = approvals
            .map((m) => m.rule)
            .sort(
              (a, b) =>
                (b.approvals_required ?? 1) - (a.approvals_required ?? 1) ||
                (a.timeout_minutes ?? 240) - (b.timeout_minutes ?? 240) ||
                (a.name < b.name ? -1 : 1),
            )[0]!;
          assert.deepEqual(verdict(outcome), {
            effect: 'approval',
            ruleName: best.name,
            approvalsRequired: best.approvals_required ?? 1,
            timeoutMinutes: best.timeout_minutes ?? 240,
            approvers: [
              ...new Set([
                ...(best.approvers?.length ? best.approvers : ['role:admin']),
                ...(classification === 'new' ? ['role:admin'] : []),
              ]),
            ],
            reason: null,
          });
        } else if (classification === 'new' || classification === 'approval') {
          assert.deepEqual(
            { ...verdict(outcome), ruleName: undefined },
            {
              effect: 'approval',
              ruleName: undefined,
              approvalsRequired: 1,
              timeoutMinutes: 240,
              approvers: ['role:admin'],
              reason: null,
            },
          );
        } else {
          assert.equal(outcome.effect, 'allow');
          assert.deepEqual(outcome.approvers, []);
          assert.equal(outcome.reason, null);
        }
      }),
      { numRuns: 500 },
    );
  });
});
