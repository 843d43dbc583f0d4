/**
 * `approvals simulate`: replays a workspace's stored calls of a period against a draft rule set and
 * reports what would have been decided differently, so a policy change can be judged before it ships.
 */
import { type Classification, decide, type Outcome } from '../domain/policy.ts';
import {
  compileRule,
  type Effect,
  matchRules,
  PERIOD_MS,
  type RuleDefinition,
  type RuleMatch,
  scopeKey,
  type TypeMismatch,
} from '../domain/rules.ts';
import { listCallsForReplay, type ReplayedCall } from '../store/holds.ts';
import { listMembers } from '../store/members.ts';
import { findRuleSet, listGroups } from '../store/rule-sets.ts';
import { listTools } from '../store/tools.ts';
import type { Workspace } from '../store/workspaces.ts';
import { configError, crossCheck, type ParsedConfig } from './config-file.ts';
import type { ServiceContext } from './context.ts';

const EFFECT_OF_STATUS = { allowed: 'allow', pending: 'approval', denied: 'deny' } as const;
const PAGE = 1000;
const MAX_EXAMPLES = 20;
const LONGEST_WINDOW = PERIOD_MS.day;

interface Decision {
  effect: Effect;
  rule: string | null;
  approvals_required: number;
  timeout_minutes: number | null;
}

/** The draft's decision, with the arguments of the wrong type that made its rule apply. */
export interface DraftDecision extends Decision {
  type_mismatches: ({ arg: string } & TypeMismatch)[];
}

export interface SimulationReport {
  period: { from: string; to: string };
  rules: { current: number; draft: number };
  holds: number;
  unchanged: number;
  changed: number;
  transitions: { from: Effect; to: Effect; count: number }[];
  examples: {
    id: string;
    created_at: string;
    connection: string;
    tool_name: string;
    agent: string;
    actual: Decision;
    draft: DraftDecision;
  }[];
}

function actualDecision(call: ReplayedCall): Decision {
  const effect = EFFECT_OF_STATUS[call.submitStatus];
  return {
    effect,
    rule: call.ruleName,
    approvals_required: call.approvalsRequired,
    timeout_minutes:
      effect === 'approval' && call.expiresAt !== null
        ? Math.round((call.expiresAt - call.createdAt) / 60_000)
        : null,
  };
}

const draftDecision = (outcome: Outcome): DraftDecision => ({
  effect: outcome.effect,
  rule: outcome.ruleName,
  approvals_required: outcome.approvalsRequired,
  timeout_minutes: outcome.effect === 'approval' ? outcome.timeoutMinutes : null,
  type_mismatches: ((outcome.facts.conditions ?? []) as RuleMatch['conditions']).flatMap((c) =>
    c.type_mismatch ? [{ arg: c.arg, ...c.type_mismatch }] : [],
  ),
});

const differs = (a: Decision, b: Decision) =>
  a.effect !== b.effect ||
  (a.effect === 'approval' &&
    (a.approvals_required !== b.approvals_required || a.timeout_minutes !== b.timeout_minutes));

/** Call times per tool, per agent and per both, oldest first, for sliding-window counts. */
class History {
  private readonly times = new Map<string, number[]>();

  add(call: ReplayedCall) {
    for (const key of this.keys(call)) {
      let list = this.times.get(key) ?? [];
      // Now and then forget what no window can reach any more, keeping memory flat.
      if (list.length > 4096 && list[2048]! <= call.createdAt - LONGEST_WINDOW) {
        list = list.slice(firstAfter(list, call.createdAt - LONGEST_WINDOW));
      }
      list.push(call.createdAt);
      this.times.set(key, list);
    }
  }

  count(
    scope: { connection: string; toolName: string | null; agentId: string | null; windowMs: number },
    at: number,
  ) {
    const list = this.times.get(scopeKey({ ...scope, windowMs: 0 })) ?? [];
    return list.length - firstAfter(list, at - scope.windowMs);
  }

  private keys(call: ReplayedCall) {
    const { connection, toolName, agentId } = call;
    return [
      scopeKey({ connection, toolName, agentId: null, windowMs: 0 }),
      scopeKey({ connection, toolName: null, agentId, windowMs: 0 }),
      scopeKey({ connection, toolName, agentId, windowMs: 0 }),
    ];
  }
}

/** Index of the first time strictly after `t` in an ascending list. */
function firstAfter(list: number[], t: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (list[middle]! > t) high = middle;
    else low = middle + 1;
  }
  return low;
}

export async function simulatePolicy(
  ctx: ServiceContext,
  workspace: Workspace,
  { config, lineOf }: ParsedConfig,
  options: { sinceMs: number },
): Promise<SimulationReport> {
  const to = ctx.now();
  const from = to - options.sinceMs;
  const storedMembers = await listMembers(ctx.db, workspace.id);
  const emailOf = new Map(storedMembers.map((m) => [m.id, m.email]));
  const storedGroups = new Map(
    [...(await listGroups(ctx.db, workspace.id))].map(([name, ids]) => [
      name,
      ids.map((id) => emailOf.get(id)!),
    ]),
  );
  const current = await findRuleSet(ctx.db, workspace.id);
  const issues = crossCheck(
    config,
    { members: storedMembers, groups: storedGroups, rules: current.rules },
    lineOf,
  );
  if (issues.length > 0) throw configError(issues);

  const draftRules: RuleDefinition[] = config.rules ?? current.rules;
  const compiled = draftRules.map(compileRule);
  const classification = new Map<string, Classification>(
    (await listTools(ctx.db, workspace.id)).map((tool) => [
      `${tool.connection}\u0000${tool.name}`,
      tool.classification,
    ]),
  );
  for (const tool of config.tools ?? [])
    classification.set(`${tool.connection}\u0000${tool.tool}`, tool.classification);

  const report: SimulationReport = {
    period: { from: new Date(from).toISOString(), to: new Date(to).toISOString() },
    rules: { current: current.rules.length, draft: draftRules.length },
    holds: 0,
    unchanged: 0,
    changed: 0,
    transitions: [],
    examples: [],
  };
  const transitions = new Map<string, number>();
  const history = new History();
  // Calls just before the period count toward frequency rules of the first calls in it.
  let cursor: { createdAt: number; id: string } | null = null;
  for (;;) {
    const page = await listCallsForReplay(
      ctx.db,
      workspace.id,
      { from: from - LONGEST_WINDOW, to },
      cursor,
      PAGE,
    );
    for (const call of page) {
      if (call.createdAt >= from) {
        const matches = matchRules(compiled, call);
        const counts = new Map<string, number>();
        for (const { scope } of matches)
          if (scope) counts.set(scopeKey(scope), history.count(scope, call.createdAt) + 1);
        const known = classification.get(`${call.connection}\u0000${call.toolName}`) ?? 'new';
        const draft = draftDecision(decide({ classification: known, matches, counts }));
        const actual = actualDecision(call);
        report.holds += 1;
        if (differs(actual, draft)) {
          report.changed += 1;
          const key = `${actual.effect}\u0000${draft.effect}`;
          transitions.set(key, (transitions.get(key) ?? 0) + 1);
          if (report.examples.length < MAX_EXAMPLES) {
            report.examples.push({
              id: call.id,
              created_at: new Date(call.createdAt).toISOString(),
              connection: call.connection,
              tool_name: call.toolName,
              agent: call.agentId,
              actual,
              draft,
            });
          }
        } else {
          report.unchanged += 1;
        }
      }
      history.add(call);
    }
    if (page.length < PAGE) break;
    const last = page[page.length - 1]!;
    cursor = { createdAt: last.createdAt, id: last.id };
  }
  report.transitions = [...transitions]
    .map(([key, count]) => {
      const [fromEffect, toEffect] = key.split('\u0000') as [Effect, Effect];
      return { from: fromEffect, to: toEffect, count };
    })
    .sort((a, b) => b.count - a.count);
  return report;
}
