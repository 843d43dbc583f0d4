/**
 * One call evaluated against 1,000 rules (matchRules + decide, pure), beside its floor: one
 * POST /api/v1/holds round trip against a real service. Then the same round trip with the 1,000
 * rules applied to the workspace, which shows what the rules add end to end.
 */
import { type Counts, decide } from '../src/domain/policy.ts';
import {
  type Call,
  type CompiledRule,
  type Condition,
  compileRule,
  type CountBy,
  frequencyScope,
  matchRules,
  type Period,
  type RuleDefinition,
  scopeKey,
} from '../src/domain/rules.ts';
import { ServiceError } from '../src/services/errors.ts';
import {
  type BenchService,
  compared,
  type Figure,
  microsSince,
  percentile,
  sample,
  startBenchService,
} from './lib.ts';

const RULES = 1_000;
const CALLS = 1_000;
const SEED = 0x5eed;

/** mulberry32: small, fast, and the same sequence on every machine for one seed. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  /** Earlier items more often (about 1/rank), so a few namespaces carry most rules and calls. */
  const skewed = <T>(items: readonly T[]): T => items[Math.floor(items.length * next() ** 2)]!;
  const some = <T>(items: readonly T[], min: number, max: number): T[] =>
    [...items].sort(() => next() - 0.5).slice(0, int(min, max));
  return { next, int, pick, skewed, some, chance: (p: number) => next() < p };
}
type Random = ReturnType<typeof random>;

const NAMESPACES = [
  'payments',
  'email',
  'files',
  'db',
  'crm',
  'github',
  'invoices',
  'slack',
  'calendar',
  'users',
  'storage',
  'deploy',
] as const;
const ACTIONS = [
  'create',
  'read',
  'list',
  'update',
  'delete',
  'send',
  'refund',
  'transfer',
  'export',
  'approve',
  'query',
  'archive',
] as const;
const AGENTS = [
  'billing-bot',
  'support-bot',
  'ops-agent',
  'agent-7',
  'research-1',
  'sales-assistant',
] as const;
const AGENT_GLOBS = ['*', '*-bot', 'billing-*', 'agent-?', 'ops-*', 'support-bot', 'research-1'] as const;
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF'] as const;
const DOMAINS = ['acme.test', 'gmail.com', 'example.com', 'yahoo.com', 'partner.io'] as const;
const PATHS = [
  '/etc/passwd',
  '/home/ana/report.pdf',
  '/var/log/app.log',
  '/srv/keys/prod.pem',
  '/tmp/../etc/x',
];
const TAGS = ['urgent', 'internal', 'external', 'pii', 'test'] as const;
const ENVS = ['prod', 'staging', 'dev'] as const;
const QUERIES = [
  'SELECT * FROM users',
  'DROP TABLE users',
  'delete from invoices where id = 4',
  'UPDATE t SET a = 1',
];
const REPOS = ['acme/api', 'acme/web', 'public/docs', 'acme/infra'] as const;

/** The REST API's connection (src/domain/hold.ts), and two MCP servers. */
const CONNECTIONS = ['SDK', 'files', 'github'] as const;
const MEMBERS = ['admin@bench.test', 'alice@bench.test', 'bob@bench.test'] as const;

/** A condition on one of the arguments calls carry, with an operator that suits its type. */
function condition(r: Random): Condition {
  switch (r.int(0, 9)) {
    case 0:
      return { arg: 'amount', op: r.pick(['gt', 'gte', 'lt', 'lte'] as const), value: r.int(1, 200) * 50 };
    case 1:
      return { arg: 'currency', op: r.pick(['eq', 'ne'] as const), value: r.pick(CURRENCIES) };
    case 2:
      return { arg: 'currency', op: r.pick(['in', 'not_in'] as const), value: r.some(CURRENCIES, 1, 3) };
    case 3:
      return r.chance(0.7)
        ? {
            arg: 'recipient',
            op: 'matches',
            value: `@(${r.some(DOMAINS, 1, 2).join('|').replaceAll('.', '\\.')})$`,
          }
        : { arg: 'recipient', op: 'contains', value: `@${r.pick(DOMAINS)}` };
    case 4:
      return r.chance(0.5)
        ? { arg: 'to.domain', op: 'in', value: r.some(DOMAINS, 1, 3) }
        : { arg: 'to.domain', op: 'eq', value: r.pick(DOMAINS) };
    case 5:
      return {
        arg: 'path',
        op: 'matches',
        value: r.pick(['^/etc/', '\\.(pem|key)$', '(^|/)\\.\\.(/|$)', '^/srv/', '^/home/[a-z]+/']),
      };
    case 6:
      return r.chance(0.5)
        ? { arg: 'tags', op: 'contains', value: r.pick(TAGS) }
        : { arg: r.pick(['tags', 'ticket', 'dry_run']), op: 'exists', value: r.chance(0.8) };
    case 7:
      return r.chance(0.5)
        ? { arg: 'env', op: 'eq', value: 'prod' }
        : { arg: 'env', op: 'in', value: ['prod', 'staging'] };
    case 8:
      return {
        arg: 'query',
        op: 'matches',
        value: r.pick(['(?i)^\\s*(drop|truncate)\\b', '(?i)^\\s*delete\\s+from\\b', '(?i)\\bwhere\\b']),
      };
    default:
      return { arg: 'count', op: r.pick(['gt', 'lte', 'ne'] as const), value: r.int(1, 50) * 10 };
  }
}

function rule(r: Random, index: number): RuleDefinition {
  const namespace = r.skewed(NAMESPACES);
  const shape = r.next();
  const tool =
    shape < 0.5
      ? `${namespace}.${r.pick(ACTIONS)}`
      : shape < 0.8
        ? `${namespace}.*`
        : shape < 0.9
          ? `*.${r.pick(ACTIONS)}`
          : shape < 0.95
            ? `${namespace}.?e*`
            : '*';
  const effect = r.pick(['allow', 'approval', 'approval', 'deny'] as const);
  const definition: RuleDefinition = {
    name: `rule-${String(index).padStart(4, '0')} ${effect} ${tool}`,
    tool,
    effect,
  };
  const connection = r.next();
  if (connection < 0.2) definition.connection = 'SDK';
  else if (connection < 0.3) definition.connection = r.pick(CONNECTIONS);
  if (r.chance(0.4)) definition.agent = r.pick(AGENT_GLOBS);
  const conditions = r.int(0, 3);
  if (conditions > 0) definition.when = Array.from({ length: conditions }, () => condition(r));
  if (r.chance(0.1)) {
    definition.frequency = {
      more_than: r.int(1, 20) * 5,
      per: r.pick(['minute', 'hour', 'day'] satisfies Period[]),
      by: r.pick(['tool', 'agent', 'tool_and_agent'] satisfies CountBy[]),
    };
  }
  if (effect === 'approval') {
    definition.approvers = r.some(MEMBERS, 1, 3);
    definition.approvals_required = r.int(1, definition.approvers.length);
    definition.timeout_minutes = r.pick([30, 60, 120, 240, 1440]);
  }
  if (effect === 'deny' && r.chance(0.5)) definition.reason = `Blocked by policy ${index}`;
  return definition;
}

function callArguments(r: Random): Record<string, unknown> {
  const all: Record<string, () => unknown> = {
    amount: () => r.int(0, 20_000),
    currency: () => r.pick(CURRENCIES),
    recipient: () => `${r.pick(['ap', 'ana', 'ops', 'ceo'])}@${r.pick(DOMAINS)}`,
    to: () => ({ domain: r.pick(DOMAINS), name: 'Ana' }),
    path: () => r.pick(PATHS),
    tags: () => r.some(TAGS, 0, 3),
    env: () => r.pick(ENVS),
    query: () => r.pick(QUERIES),
    count: () => r.int(1, 500),
    repo: () => r.pick(REPOS),
    ticket: () => `T-${r.int(1, 9999)}`,
  };
  const names = r.some(Object.keys(all), 2, 8);
  return Object.fromEntries(names.map((name) => [name, all[name]!()]));
}

function makeCall(r: Random): Call {
  return {
    connection: r.chance(0.8) ? 'SDK' : r.pick(CONNECTIONS),
    toolName: `${r.skewed(NAMESPACES)}.${r.pick(ACTIONS)}`,
    agentId: r.pick(AGENTS),
    arguments: callArguments(r),
  };
}

/** What the frequency counters would say for this call: every scope it could ask about. */
function countsFor(r: Random, call: Call): Counts {
  const counts = new Map<string, number>();
  for (const by of ['tool', 'agent', 'tool_and_agent'] as const) {
    for (const per of ['minute', 'hour', 'day'] as const) {
      counts.set(scopeKey(frequencyScope({ more_than: 0, per, by }, call)), r.int(1, 150));
    }
  }
  return counts;
}

const ruleSet = () => {
  const r = random(SEED);
  return Array.from({ length: RULES }, (_, index) => rule(r, index));
};

/** Compiling the set: the first time (cold code), and the median of nine more. */
function compileFigures(definitions: RuleDefinition[]): {
  rules: CompiledRule[];
  cold: Figure;
  warm: Figure;
} {
  let start = process.hrtime.bigint();
  let rules = definitions.map(compileRule);
  const cold = microsSince(start) / 1000;
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    start = process.hrtime.bigint();
    rules = definitions.map(compileRule);
    times.push(microsSince(start) / 1000);
  }
  return {
    rules,
    cold: { bench: 'rules', figure: 'compile 1,000 rules, first', value: cold, unit: 'ms' },
    warm: {
      bench: 'rules',
      figure: 'compile 1,000 rules, p50 of 9',
      value: percentile(times, 50),
      unit: 'ms',
      note: 'once per rule-set version, on the first call after apply',
    },
  };
}

async function evaluationFigures(rules: CompiledRule[]): Promise<Figure[]> {
  const r = random(SEED + 1);
  const calls = Array.from({ length: CALLS }, () => makeCall(r));
  const counts = calls.map((call) => countsFor(r, call));
  const matched = calls.map((call) => matchRules(rules, call).length);
  const classifications = ['allow', 'approval', 'deny', null] as const;

  // Used after the loop, so the evaluations cannot be optimized away.
  let sink = 0;
  const evaluate = (i: number) => {
    const call = calls[i % CALLS]!;
    const outcome = decide({
      classification: classifications[i % classifications.length]!,
      matches: matchRules(rules, call),
      counts: counts[i % CALLS]!,
    });
    sink += outcome.approvalsRequired;
  };
  const { samples, totalMicros } = await sample(evaluate, { warmup: 2_000, count: 20_000, budgetMs: 10_000 });
  // The same evaluations timed in the process's CPU time, which a neighbour taking the core does not
  // stretch (wall-clock p99s on a busy two-core machine are its scheduler's). process.cpuUsage is
  // getrusage(RUSAGE_SELF): Linux adds the calling thread's time since its last tick, so it counts
  // this thread to the microsecond (a 10 µs busy loop reads 10-11 µs), the collector's helper threads
  // as the kernel last accounted them. (process.threadCpuUsage counts in ticks: it reads 0 µs there.)
  const cpuSamples: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const before = process.cpuUsage();
    evaluate(i);
    const { user, system } = process.cpuUsage(before);
    cpuSamples.push(user + system);
  }
  if (sink < 0) throw new Error('unreachable');
  const cpuP99 = percentile(cpuSamples, 99);
  const spread = [0, 50, 99].map((p) => (p === 0 ? Math.min(...matched) : percentile(matched, p)));
  const note = `${CALLS} calls (${matched.filter((n) => n === 0).length} match no rule); rules matched per call: min ${spread[0]}, p50 ${spread[1]}, p99 ${spread[2]}, max ${Math.max(...matched)}`;
  return [
    {
      bench: 'rules',
      figure: 'evaluate 1 call vs 1,000 rules, p50',
      value: percentile(samples, 50),
      unit: 'µs',
      note,
    },
    {
      bench: 'rules',
      figure: 'evaluate 1 call vs 1,000 rules, p99',
      value: percentile(samples, 99),
      unit: 'µs',
      note: `wall clock; issue 43's goal, at most 100 µs: ${percentile(samples, 99) <= 100 ? 'met' : 'NOT MET'}`,
    },
    {
      bench: 'rules',
      figure: 'evaluate 1 call vs 1,000 rules, CPU p99',
      value: cpuP99,
      unit: 'µs',
      note: `the same 20,000 evaluations, each timed in the process's CPU time (process.cpuUsage, whole microseconds); issue 43's goal, p99 at most 100 µs: ${cpuP99 <= 100 ? 'met' : 'NOT MET'}`,
    },
    {
      bench: 'rules',
      figure: 'evaluations per second',
      value: samples.length / (totalMicros / 1e6),
      unit: '/s',
      note: `${samples.length} evaluations, one thread`,
    },
  ];
}

const TOOL = 'payments.refund';

/** The workspace: three members, and the tool the round trips call classified allow. */
const baseConfig = {
  members: MEMBERS.map((email, index) => ({
    email,
    name: `M${index}`,
    role: index === 0 ? 'admin' : 'approver',
  })),
  tools: [{ connection: 'SDK', tool: TOOL, classification: 'allow' }],
};

const roundTripCall = { amount: 120, currency: 'EUR', recipient: 'ap@acme.test', ticket: 'T-1' };

const ROUND_TRIP_WARMUP = 200;

/** Sequential POSTs on one keep-alive connection, after a warm-up; each must answer 201. */
async function roundTrips(bench: BenchService, key: string, label: string) {
  const statuses = new Map<string, number>();
  const { samples } = await sample(
    async (i) => {
      // The rate limit is 120 requests a minute per workspace, counted on the service's clock.
      if (i % 100 === 0) bench.nextMinute();
      const answer = await bench.post('/api/v1/holds', key, {
        tool_name: TOOL,
        arguments: roundTripCall,
        agent_identity: { id: 'billing-bot', label: 'Billing bot' },
        idempotency_key: `${label}-${i}`,
      });
      const status = (answer.body as { status?: string }).status ?? '?';
      if (answer.status !== 201)
        throw new Error(`POST /api/v1/holds answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      if (i >= ROUND_TRIP_WARMUP) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    },
    { warmup: ROUND_TRIP_WARMUP, count: 1_500, budgetMs: 12_000 },
  );
  return { samples, statuses: [...statuses].map(([status, n]) => `${n} ${status}`).join(', ') };
}

export interface Skipped {
  figure: string;
  reason: string;
}

export async function run(): Promise<{ figures: Figure[]; skipped: Skipped[] }> {
  const definitions = ruleSet();
  const compile = compileFigures(definitions);
  const [evalP50, evalP99, perSecond] = await evaluationFigures(compile.rules);
  const figures: Figure[] = [];
  const skipped: Skipped[] = [];

  const bench = await startBenchService();
  try {
    const { workspace, key } = await bench.workspace(baseConfig);
    const floor = await roundTrips(bench, key, 'floor');
    const post50: Figure = {
      bench: 'rules',
      figure: 'POST /api/v1/holds round trip, p50',
      value: percentile(floor.samples, 50),
      unit: 'µs',
      note: `the floor: SQLite, loopback, keep-alive, sequential, a tool classified allow, no rules; ${floor.samples.length} requests (${floor.statuses})`,
    };
    const post99: Figure = {
      bench: 'rules',
      figure: 'POST /api/v1/holds round trip, p99',
      value: percentile(floor.samples, 99),
      unit: 'µs',
    };
    figures.push(
      compile.cold,
      compared(compile.warm, post50),
      compared(evalP50!, post50),
      compared(evalP99!, post99),
      perSecond!,
      post50,
      post99,
    );

    try {
      await bench.apply(workspace, { ...baseConfig, rules: definitions });
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      skipped.push({
        figure: 'POST /api/v1/holds round trip with 1,000 rules',
        reason: `applyConfig refused the rules: ${error.message.split('\n')[0]}`,
      });
      return { figures, skipped };
    }
    const withRules = await roundTrips(bench, key, 'rules');
    const matched = matchRules(compile.rules, {
      connection: 'SDK',
      toolName: TOOL,
      agentId: 'billing-bot',
      arguments: roundTripCall,
    }).length;
    figures.push(
      compared(
        {
          bench: 'rules',
          figure: 'POST round trip with 1,000 rules, p50',
          value: percentile(withRules.samples, 50),
          unit: 'µs',
          note: `${matched} rules match the call; ${withRules.samples.length} requests (${withRules.statuses})`,
        },
        post50,
      ),
      compared(
        {
          bench: 'rules',
          figure: 'POST round trip with 1,000 rules, p99',
          value: percentile(withRules.samples, 99),
          unit: 'µs',
        },
        post99,
      ),
    );
    return { figures, skipped };
  } finally {
    await bench.close();
  }
}
