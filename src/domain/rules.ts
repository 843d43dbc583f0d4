/**
 * The rule language (decisions.md, "The file apply takes"): which calls a rule matches, what its
 * conditions on the arguments say, and what it asks its frequency counter. Pure; regular expressions
 * run on RE2 (linear time) and globs on a bounded matcher, so no pattern can hang the process.
 */
import { RE2JS } from 're2js';
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import type { EscalationDefinition, RemindDefinition } from './follow-ups.ts';

export const OPERATORS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'not_in',
  'contains',
  'matches',
  'exists',
] as const;
export type Operator = (typeof OPERATORS)[number];

export interface Condition {
  arg: string;
  op: Operator;
  value?: unknown;
}

export type Period = 'minute' | 'hour' | 'day';
export type CountBy = 'tool' | 'agent' | 'tool_and_agent';

export interface Frequency {
  more_than: number;
  per: Period;
  by: CountBy;
}

/** What a rule does with the calls it matches. */
export type Effect = 'allow' | 'approval' | 'deny';

export interface RuleDefinition {
  name: string;
  connection?: string;
  tool: string;
  agent?: string;
  when?: Condition[];
  frequency?: Frequency;
  effect: Effect;
  approvers?: string[];
  approvals_required?: number;
  timeout_minutes?: number;
  reason?: string | null;
  /** Reminders to those who have not decided yet (approval only). */
  remind?: RemindDefinition;
  /** Approvers added when nobody has finished deciding in time (approval only). */
  escalate?: EscalationDefinition[];
  /** Each approval must carry the approver's passkey signature over the exact action (approval only). */
  signed?: boolean;
  /**
   * Whether its holds may be approved together with others (approval only). Default: yes, but not
   * for four-eyes or passkey-signed rules (bulk.ts).
   */
  bulk?: boolean;
  /**
   * The requesting member may approve their own request in their MCP client, when it asks them
   * (approval only; one approval, never signed: config-schema.ts refuses the rest).
   */
  self_approval?: boolean;
  /**
   * The arguments (dotted paths, as conditions name them) an approver may change before approving
   * (approval only; domain/edits.ts): the rule's conditions are checked again on the new values.
   */
  editable?: string[];
  /** What "I'm on it" does on its holds (approval only). */
  claim?: ClaimDefinition;
  /**
   * How long a repeat of a finished proxied call gets the same answer (approval and deny rules;
   * repeat-window.ts; default 5).
   */
  repeat_window_minutes?: number;
}

/** A claim marks a hold as taken by one member: released after `minutes` (default 30) or by hand. */
export interface ClaimDefinition {
  minutes?: number;
  /** While claimed, escalation steps wait (as an acknowledged page does). */
  halts_escalation?: boolean;
}

export interface Call {
  connection: string;
  toolName: string;
  agentId: string;
  arguments: Record<string, unknown>;
}

export const PERIOD_MS: Record<Period, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export type Matcher = (text: string) => boolean;

/**
 * `*` any run of characters, `?` one character, everything else literal. Exact names and `prefix*`
 * compare strings directly; other globs use a two-pointer match that backtracks only to the last
 * star, so the cost is at most length × length (no regular expression, nothing to blow up).
 */
export function compileGlob(glob: string): Matcher {
  if (!/[*?]/.test(glob)) return (text) => text === glob;
  if (/^[^*?]*\*$/.test(glob)) {
    const prefix = glob.slice(0, -1);
    return (text) => text.startsWith(prefix);
  }
  return (text) => {
    let g = 0;
    let t = 0;
    let star = -1;
    let resume = 0;
    while (t < text.length) {
      if (g < glob.length && (glob[g] === '?' || glob[g] === text[t])) {
        g++;
        t++;
      } else if (g < glob.length && glob[g] === '*') {
        star = g++;
        resume = t;
      } else if (star >= 0) {
        g = star + 1;
        t = ++resume;
      } else {
        return false;
      }
    }
    while (glob[g] === '*') g++;
    return g === glob.length;
  };
}

/** Throws with RE2's message when the pattern is not a valid RE2 regular expression. */
export const compilePattern = (pattern: string) => RE2JS.compile(pattern);

interface CompiledCondition extends Condition {
  path: string[];
  pattern: RE2JS | null;
  /** For `matches`: the answers for the first texts it was asked about (see `matchesPattern`). */
  answers: Map<string, boolean> | null;
}

/** How many answers a `matches` condition keeps, for texts of at most ANSWERED_TEXT characters. */
const ANSWERS_KEPT = 32;
const ANSWERED_TEXT = 128;

/**
 * RE2 runs in linear time but is the dearest part of an evaluation, and agents send the same values
 * again and again (a recipient, a path, a query): a condition keeps its answers for the first short
 * texts it meets, for as long as its rule set is compiled (at most ANSWERS_KEPT of them, so at most
 * a few KiB a condition).
 */
function matchesPattern(condition: CompiledCondition, text: string): boolean {
  const known = condition.answers!.get(text);
  if (known !== undefined) return known;
  const found = condition.pattern!.matcher(text).find();
  if (text.length <= ANSWERED_TEXT && condition.answers!.size < ANSWERS_KEPT)
    condition.answers!.set(text, found);
  return found;
}

export interface CompiledRule {
  rule: RuleDefinition;
  tool: Matcher;
  agent: Matcher | null;
  conditions: CompiledCondition[];
}

export function compileRule(rule: RuleDefinition): CompiledRule {
  return {
    rule,
    tool: compileGlob(rule.tool),
    agent: rule.agent === undefined ? null : compileGlob(rule.agent),
    conditions: (rule.when ?? []).map((condition) => ({
      ...condition,
      path: condition.arg.split('.'),
      pattern: condition.op === 'matches' ? compilePattern(String(condition.value)) : null,
      answers: condition.op === 'matches' ? new Map() : null,
    })),
  };
}

/** What `valueAt` answers for a path the arguments do not have. */
const ABSENT = Symbol('absent');

/** The value at a dotted path through own properties only (array elements by index), or ABSENT. */
function valueAt(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return ABSENT;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Follows a dotted path through own properties only (array elements by index). */
export function readPath(value: unknown, path: string[]): { found: boolean; value?: unknown } {
  const found = valueAt(value, path);
  return found === ABSENT ? { found: false } : { found: true, value: found };
}

/** Equal as JSON values; two scalars compare as they are (their canonical texts are equal exactly when they are). */
const same = (a: unknown, b: unknown) =>
  typeof a !== 'object' || a === null || typeof b !== 'object' || b === null
    ? a === b
    : canonicalJson(a) === canonicalJson(b);

/** Ordering is typed: numbers with numbers, strings with strings; anything else does not compare. */
function order(a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return null;
}

/** A JSON value's type, as an explanation names it. */
export type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

const jsonType = (value: unknown): JsonType =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : (typeof value as JsonType);

/** An argument present with another type than its comparison needs. */
export interface TypeMismatch {
  /** The argument's type, or the type of its item at `item`. */
  type: JsonType;
  needs: string;
  /** For `contains` on an array: the index of the first item of another type than `value`. */
  item?: number;
}

const withArticle = (type: string) =>
  type === 'null' ? type : /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;

/** `amount is a string, not a number`; an array item is named by its path (`ids.1`). */
export const describeTypeMismatch = ({ arg, type, needs, item }: { arg: string } & TypeMismatch) =>
  `${item === undefined ? arg : `${arg}.${item}`} is ${withArticle(type)}, not ${withArticle(needs)}`;

/**
 * Why a false comparison may be a value of the wrong type: ordering needs the type of `value`,
 * `matches` a string, `contains` a string (for a string `value`) or an array whose items have the type
 * of `value`. Other operators compare any value.
 */
function typeMismatch(op: Operator, expected: unknown, actual: unknown): TypeMismatch | undefined {
  const type = jsonType(actual);
  switch (op) {
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const needs = typeof expected === 'string' ? 'string' : 'number';
      return type === needs ? undefined : { type, needs };
    }
    case 'matches':
      return type === 'string' ? undefined : { type, needs: 'string' };
    case 'contains': {
      if (type === 'string' && typeof expected === 'string') return undefined;
      if (type !== 'array')
        return { type, needs: typeof expected === 'string' ? 'string or array' : 'array' };
      const needs = jsonType(expected);
      const item = (actual as unknown[]).findIndex((element) => jsonType(element) !== needs);
      return item < 0 ? undefined : { type: jsonType((actual as unknown[])[item]), needs, item };
    }
    default:
      return undefined;
  }
}

/**
 * Whether `condition` holds for `value`, the argument it names (ABSENT when the call lacks it). A
 * condition on an argument that is absent is false, except `exists` which asks exactly that.
 */
function test(condition: CompiledCondition, value: unknown): boolean {
  if (condition.op === 'exists') return (value !== ABSENT) === (condition.value ?? true);
  if (value === ABSENT) return false;
  const expected = condition.value;
  // `order` is null for values that do not compare: every ordering of them is false.
  switch (condition.op) {
    case 'eq':
      return same(value, expected);
    case 'ne':
      return !same(value, expected);
    case 'gt':
      return (order(value, expected) ?? 0) > 0;
    case 'gte':
      return (order(value, expected) ?? -1) >= 0;
    case 'lt':
      return (order(value, expected) ?? 0) < 0;
    case 'lte':
      return (order(value, expected) ?? 1) <= 0;
    case 'in':
      return Array.isArray(expected) && expected.some((item) => same(value, item));
    case 'not_in':
      return Array.isArray(expected) && !expected.some((item) => same(value, item));
    case 'contains':
      return typeof value === 'string'
        ? typeof expected === 'string' && value.includes(expected)
        : Array.isArray(value) && value.some((item) => same(item, expected));
    case 'matches':
      return typeof value === 'string' && matchesPattern(condition, value);
  }
}

/**
 * Whether `condition` holds for the call's arguments, with the value it compared; a false comparison
 * of a present argument of the wrong type reports the mismatch (see matchRules).
 */
export function holds(
  condition: CompiledCondition,
  args: Record<string, unknown>,
): { result: boolean; actual?: unknown; mismatch?: TypeMismatch } {
  const value = valueAt(args, condition.path);
  const result = test(condition, value);
  if (condition.op === 'exists' || value === ABSENT) return { result };
  if (result) return { result, actual: value };
  return { result, actual: value, mismatch: typeMismatch(condition.op, condition.value, value) };
}

/**
 * Whether a rule's conditions let it match: each holds, or (fail closed) is false for a value of the
 * wrong type in a rule that holds or denies. Allocates nothing but a mismatch's description: most
 * rules a call meets fail here.
 */
function conditionsPass({ rule, conditions }: CompiledRule, args: Record<string, unknown>): boolean {
  for (const condition of conditions) {
    const value = valueAt(args, condition.path);
    if (test(condition, value)) continue;
    // Fail closed: a value of the wrong type (a quoted number, say) must not slip past a rule that
    // holds or denies, nor open a rule that allows.
    const failsClosed =
      rule.effect !== 'allow' &&
      value !== ABSENT &&
      typeMismatch(condition.op, condition.value, value) !== undefined;
    if (!failsClosed) return false;
  }
  return true;
}

export interface FrequencyScope {
  connection: string;
  toolName: string | null;
  agentId: string | null;
  windowMs: number;
}

/** Stable key of a frequency counter, so rules that count the same calls share one count. */
export const scopeKey = (scope: FrequencyScope) =>
  JSON.stringify([
    scope.toolName === null ? null : scope.connection,
    scope.toolName,
    scope.agentId,
    scope.windowMs,
  ]);

export function frequencyScope(frequency: Frequency, call: Call): FrequencyScope {
  return {
    connection: call.connection,
    toolName: frequency.by === 'agent' ? null : call.toolName,
    agentId: frequency.by === 'tool' ? null : call.agentId,
    windowMs: PERIOD_MS[frequency.per],
  };
}

export interface RuleMatch {
  rule: RuleDefinition;
  /** What the rule saw: each condition with the value it compared. */
  conditions: {
    arg: string;
    op: Operator;
    value: unknown;
    actual: unknown;
    /** Set when the argument had another type than the comparison needs. */
    type_mismatch?: TypeMismatch;
  }[];
  /** Set when the rule counts calls: the counter to ask. */
  scope: FrequencyScope | null;
}

/**
 * A match describes its conditions when first asked: a call may match dozens of rules, and only the
 * deciding rule's are recorded (policy.ts).
 */
class Match implements RuleMatch {
  readonly rule: RuleDefinition;
  readonly scope: FrequencyScope | null;
  readonly #compiled: CompiledRule;
  readonly #args: Record<string, unknown>;
  #conditions: RuleMatch['conditions'] | undefined;

  constructor(compiled: CompiledRule, call: Call) {
    this.rule = compiled.rule;
    this.scope = compiled.rule.frequency ? frequencyScope(compiled.rule.frequency, call) : null;
    this.#compiled = compiled;
    this.#args = call.arguments;
  }

  get conditions(): RuleMatch['conditions'] {
    this.#conditions ??= this.#compiled.conditions.map((condition) => {
      const { actual, mismatch } = holds(condition, this.#args);
      return {
        arg: condition.arg,
        op: condition.op,
        value: condition.value ?? null,
        actual: actual ?? null,
        ...(mismatch && { type_mismatch: mismatch }),
      };
    });
    return this.#conditions;
  }
}

/**
 * Whether a rule's condition can hold for arguments with these names at the top: one on an argument
 * the call lacks holds only if it asks that the argument not exist.
 */
const possible = (condition: CompiledCondition, names: ReadonlySet<string>) =>
  names.has(condition.path[0]!) || (condition.op === 'exists' && condition.value === false);

/**
 * The rules of a set that can match a call, by its connection, tool and argument names: the rules
 * whose connection and tool match and whose conditions can hold for those arguments. A compiled rule
 * set serves many calls (it is compiled once per version), most of them to a few tools, each with its
 * few shapes of arguments: the rules are found once per shape, and a call goes through those alone.
 * A shape is told by the names the set's conditions read, not by all the call's (an agent chooses
 * those, as many and as long as a body holds); kept for at most `SHAPES_KEPT` shapes a set, each at most
 * `SHAPE_KEY_LENGTH` long (a longer one is not kept).
 */
const shapesOf = new WeakMap<
  CompiledRule[],
  { read: ReadonlySet<string>; rules: Map<string, CompiledRule[]> }
>();
const SHAPES_KEPT = 1_000;
const SHAPE_KEY_LENGTH = 1_024;

function candidateRules(rules: CompiledRule[], call: Call): CompiledRule[] {
  let shapes = shapesOf.get(rules);
  if (!shapes) {
    const read = new Set(rules.flatMap(({ conditions }) => conditions.map(({ path }) => path[0]!)));
    shapesOf.set(rules, (shapes = { read, rules: new Map() }));
  }
  // Own properties, as valueAt reads them.
  const names = Object.getOwnPropertyNames(call.arguments).filter((name) => shapes.read.has(name));
  const key = JSON.stringify([call.connection, call.toolName, names.sort()]);
  let found = shapes.rules.get(key);
  if (!found) {
    const present = new Set(names);
    found = rules.filter(
      ({ rule, tool, conditions }) =>
        (rule.connection === undefined || rule.connection === call.connection) &&
        tool(call.toolName) &&
        conditions.every((condition) => possible(condition, present)),
    );
    if (key.length <= SHAPE_KEY_LENGTH) {
      if (shapes.rules.size >= SHAPES_KEPT) shapes.rules.clear();
      shapes.rules.set(key, found);
    }
  }
  return found;
}

/** The rules whose connection, tool, agent and conditions match the call (frequency not yet counted). */
export function matchRules(rules: CompiledRule[], call: Call): RuleMatch[] {
  const matches: RuleMatch[] = [];
  for (const compiled of candidateRules(rules, call)) {
    if (compiled.agent && !compiled.agent(call.agentId)) continue;
    if (conditionsPass(compiled, call.arguments)) matches.push(new Match(compiled, call));
  }
  return matches;
}
