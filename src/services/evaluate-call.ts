/** Runs the decision engine for one call inside the submit transaction. */
import { type Classification, decide, type Outcome } from '../domain/policy.ts';
import {
  type Call,
  type CompiledRule,
  compileRule,
  type FrequencyScope,
  matchRules,
  scopeKey,
} from '../domain/rules.ts';
import { DEFAULT_REPEAT_WINDOW_MINUTES } from '../domain/repeat-window.ts';
import type { Sql } from '../store/db.ts';
import { countRecentCalls } from '../store/hold-calls.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import type { ServiceContext } from './context.ts';

/** Compiled rule sets by workspace, valid while the stored version is unchanged (any instance may apply). */
export type CompiledRuleSets = Map<string, { version: number; rules: CompiledRule[] }>;

async function compiledRules(tx: Sql, ctx: ServiceContext, workspaceId: string, version: number) {
  const cached = ctx.compiledRuleSets.get(workspaceId);
  if (cached?.version === version) return cached.rules;
  const stored = await findRuleSet(tx, workspaceId);
  const rules = stored.rules.map(compileRule);
  ctx.compiledRuleSets.set(workspaceId, { version: stored.version, rules });
  return rules;
}

/** The repeat window of the rule named (repeat-window.ts), under the rule set read under the lock. */
export async function repeatWindowMinutes(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  ruleSetVersion: number,
  ruleName: string | null,
): Promise<number> {
  const rules = ruleName === null ? [] : await compiledRules(tx, ctx, workspaceId, ruleSetVersion);
  const named = rules.find(({ rule }) => rule.name === ruleName)?.rule;
  return named?.repeat_window_minutes ?? DEFAULT_REPEAT_WINDOW_MINUTES;
}

/**
 * The frequency scopes the call would be counted in under the rules this process compiled last, so
 * the submission can count them in the statement that takes its lock. Only a guess: the version read
 * under the lock decides, and a scope not counted then is counted by `evaluateCall`.
 */
export function likelyScopes(ctx: ServiceContext, workspaceId: string, call: Call, now: number) {
  const cached = ctx.compiledRuleSets.get(workspaceId);
  if (!cached) return [];
  const scopes = new Map<string, FrequencyScope>();
  for (const { scope } of matchRules(cached.rules, call)) if (scope) scopes.set(scopeKey(scope), scope);
  return [...scopes.values()].map((scope) => ({ scope, since: now - scope.windowMs }));
}

export async function evaluateCall(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  call: Call,
  classification: Classification | null,
  now: number,
  /** Read under the lock: the rule set's version, and the calls counted per scope key. */
  known: { ruleSetVersion: number; counted: Map<string, number> },
): Promise<Outcome> {
  const matches = matchRules(await compiledRules(tx, ctx, workspaceId, known.ruleSetVersion), call);
  // Counted inside the transaction that holds the workspace's chain lock: concurrent submits, on any
  // instance, see each other's calls. This call is one of them.
  const counts = new Map<string, number>();
  for (const { scope } of matches) {
    if (!scope || counts.has(scopeKey(scope))) continue;
    const counted =
      known.counted.get(scopeKey(scope)) ??
      (await countRecentCalls(tx, workspaceId, scope, now - scope.windowMs));
    counts.set(scopeKey(scope), 1 + counted);
  }
  return decide({ classification, matches, counts });
}
