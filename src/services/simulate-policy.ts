/**
 * `approvals simulate`: replays a workspace's stored calls of a period against a draft rule set and
 * reports what would have been decided differently, so a policy change can be judged before it ships.
 */
import { durationMs, type EscalationDefinition, type RemindDefinition } from '../domain/follow-ups.ts';
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
import { listCallsForReplay, type ReplayedCall } from '../store/hold-calls.ts';
import { listMembers } from '../store/members.ts';
import { findRuleSet, listGroups } from '../store/rule-sets.ts';
import { listTools } from '../store/tools.ts';
import type { Workspace } from '../store/workspaces.ts';
import { crossCheck } from './config-cross-check.ts';
import { configError, type ParsedConfig, type WorkspaceConfig } from './config-file.ts';
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

/** Reminders and escalation steps as the workspace file writes them. */
export interface FollowUps {
  remind: { before: string[]; every: string | null } | null;
  escalate: EscalationDefinition[];
}

/**
 * The draft's decision, with the arguments of the wrong type that made its rule apply and, for an
 * approval, the reminders and escalation steps the hold would get.
 */
export interface DraftDecision extends Decision, FollowUps {
  type_mismatches: ({ arg: string } & TypeMismatch)[];
}

export interface SimulationReport {
  period: { from: string; to: string };
  rules: { current: number; draft: number };
  holds: number;
  unchanged: number;
  changed: number;
  transitions: { from: Effect; to: Effect; count: number }[];
  /** The calls the draft makes pending, per deciding rule, with the follow-ups each would get. */
  pending: ({ rule: string; holds: number } & FollowUps)[];
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

/**
 * What a hold the draft makes pending would be followed up with: its rule's reminders, else the
 * workspace's default ones (as at submission), and its escalation steps; only those that come before
 * its deadline, as the deadline worker would act on no other.
 */
function draftFollowUps(outcome: Outcome, defaultRemind: RemindDefinition | null): FollowUps {
  const deadline = outcome.timeoutMinutes * 60_000;
  const early = (duration: string) => durationMs(duration) < deadline;
  const remind = outcome.remind ?? defaultRemind;
  const before = (remind?.before ?? []).filter(early);
  const every = remind?.every && early(remind.every) ? remind.every : null;
  return {
    remind: before.length > 0 || every ? { before, every } : null,
    escalate: outcome.escalate.filter((step) => early(step.after)),
  };
}

const NO_FOLLOW_UPS: FollowUps = { remind: null, escalate: [] };

const draftDecision = (outcome: Outcome, followUps: FollowUps): DraftDecision => ({
  effect: outcome.effect,
  rule: outcome.ruleName,
  approvals_required: outcome.approvalsRequired,
  timeout_minutes: outcome.effect === 'approval' ? outcome.timeoutMinutes : null,
  type_mismatches: ((outcome.facts.conditions ?? []) as RuleMatch['conditions']).flatMap((c) =>
    c.type_mismatch ? [{ arg: c.arg, ...c.type_mismatch }] : [],
  ),
  remind: followUps.remind,
  escalate: followUps.escalate,
});

/** `30m`, `30m and 5m`, `1h, 30m and 5m`. */
const listed = (items: string[]) =>
  items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/**
 * `escalates after 15m to group:oncall, after 45m to role:admin; reminds 30m and 5m before the
 * deadline`, or `no reminders or escalation`: for the CLI's text and the app's preview.
 */
export function followUpsText({ remind, escalate }: FollowUps): string {
  const parts: string[] = [];
  if (escalate.length > 0)
    parts.push(`escalates ${escalate.map((step) => `after ${step.after} to ${listed(step.to)}`).join(', ')}`);
  if (remind) {
    const when = [
      ...(remind.before.length > 0 ? [`${listed(remind.before)} before the deadline`] : []),
      ...(remind.every ? [`every ${remind.every}`] : []),
    ];
    parts.push(`reminds ${when.join(' and ')}`);
  }
  return parts.join('; ') || 'no reminders or escalation';
}

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

/** The stored workspace the draft replaces, with the draft checked against it; its current rule set. */
async function checkedAgainstStored(
  ctx: ServiceContext,
  workspace: Workspace,
  { config, lineOf }: ParsedConfig,
) {
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
  return current;
}

/** Each tool's classification as the draft would have it, by connection and tool name. */
async function draftClassifications(ctx: ServiceContext, workspace: Workspace, config: WorkspaceConfig) {
  const classification = new Map<string, Classification>(
    (await listTools(ctx.db, workspace.id)).map((tool) => [
      `${tool.connection}\u0000${tool.name}`,
      tool.classification,
    ]),
  );
  for (const tool of config.tools ?? [])
    classification.set(`${tool.connection}\u0000${tool.tool}`, tool.classification);
  return classification;
}

/** The draft as the replay applies it, and what the replay has seen so far. */
interface Draft {
  compiled: ReturnType<typeof compileRule>[];
  classification: Map<string, Classification>;
  /** The draft's default reminders; left out of it, the workspace's. */
  defaultRemind: RemindDefinition | null;
  history: History;
  /** A rule's follow-ups are the same for every call it makes pending: kept once per rule. */
  pending: Map<string, SimulationReport['pending'][number]>;
}

/** What the draft decides for one call, counting the calls before it in its `history`. */
function draftDecisionOf(call: ReplayedCall, draft: Draft): DraftDecision {
  const matches = matchRules(draft.compiled, call);
  const counts = new Map<string, number>();
  for (const { scope } of matches)
    if (scope) counts.set(scopeKey(scope), draft.history.count(scope, call.createdAt) + 1);
  const known = draft.classification.get(`${call.connection}\u0000${call.toolName}`) ?? 'new';
  const outcome = decide({ classification: known, matches, counts });
  let followUps = NO_FOLLOW_UPS;
  if (outcome.effect === 'approval') {
    const rule = outcome.ruleName;
    const seen = draft.pending.get(rule) ?? {
      rule,
      holds: 0,
      ...draftFollowUps(outcome, draft.defaultRemind),
    };
    seen.holds += 1;
    draft.pending.set(rule, seen);
    followUps = seen;
  }
  return draftDecision(outcome, followUps);
}

/** Counts a replayed call in the report: unchanged, or changed (its transition, and an example). */
function tally(
  report: SimulationReport,
  transitions: Map<string, number>,
  call: ReplayedCall,
  draft: DraftDecision,
) {
  const actual = actualDecision(call);
  report.holds += 1;
  if (!differs(actual, draft)) {
    report.unchanged += 1;
    return;
  }
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
}

export async function simulatePolicy(
  ctx: ServiceContext,
  workspace: Workspace,
  parsed: ParsedConfig,
  options: { sinceMs: number },
): Promise<SimulationReport> {
  const to = ctx.now();
  const from = to - options.sinceMs;
  const { config } = parsed;
  const current = await checkedAgainstStored(ctx, workspace, parsed);
  const draftRules: RuleDefinition[] = config.rules ?? current.rules;
  const draft: Draft = {
    compiled: draftRules.map(compileRule),
    classification: await draftClassifications(ctx, workspace, config),
    defaultRemind:
      config.remind !== undefined
        ? config.remind
        : workspace.remind
          ? (JSON.parse(workspace.remind) as RemindDefinition)
          : null,
    history: new History(),
    pending: new Map(),
  };

  const report: SimulationReport = {
    period: { from: new Date(from).toISOString(), to: new Date(to).toISOString() },
    rules: { current: current.rules.length, draft: draftRules.length },
    holds: 0,
    unchanged: 0,
    changed: 0,
    transitions: [],
    pending: [],
    examples: [],
  };
  const transitions = new Map<string, number>();
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
      if (call.createdAt >= from) tally(report, transitions, call, draftDecisionOf(call, draft));
      draft.history.add(call);
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
  report.pending = [...draft.pending.values()].sort((a, b) => b.holds - a.holds);
  return report;
}
