/** Runs the decision engine for one call inside the submit transaction. */
import { type Classification, decide, type Outcome } from '../domain/policy.ts';
import { type Call, type CompiledRule, compileRule, matchRules, scopeKey } from '../domain/rules.ts';
import type { Sql } from '../store/db.ts';
import { countRecentCalls } from '../store/holds.ts';
import { findRuleSet, findRuleSetVersion } from '../store/rule-sets.ts';
import type { ServiceContext } from './context.ts';

/** Compiled rule sets by workspace, valid while the stored version is unchanged (any instance may apply). */
export type CompiledRuleSets = Map<string, { version: number; rules: CompiledRule[] }>;

async function compiledRules(tx: Sql, ctx: ServiceContext, workspaceId: string): Promise<CompiledRule[]> {
  const version = await findRuleSetVersion(tx, workspaceId);
  const cached = ctx.compiledRuleSets.get(workspaceId);
  if (cached?.version === version) return cached.rules;
  const stored = await findRuleSet(tx, workspaceId);
  const rules = stored.rules.map(compileRule);
  ctx.compiledRuleSets.set(workspaceId, { version: stored.version, rules });
  return rules;
}

export async function evaluateCall(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  call: Call,
  classification: Classification | null,
  now: number,
): Promise<Outcome> {
  const matches = matchRules(await compiledRules(tx, ctx, workspaceId), call);
  // Counted inside the transaction that holds the workspace's chain lock: concurrent submits, on any
  // instance, see each other's calls.
  const counts = new Map<string, number>();
  for (const { scope } of matches) {
    if (!scope || counts.has(scopeKey(scope))) continue;
    counts.set(scopeKey(scope), 1 + (await countRecentCalls(tx, workspaceId, scope, now - scope.windowMs)));
  }
  return decide({ classification, matches, counts });
}
