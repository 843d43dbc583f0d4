/**
 * Approve with changes (docs/rules.md, "Approve with changes"): the arguments an approval changes, checked
 * inside the decision's transaction against the rules in force, before anything is stored.
 */
import { type Hold, type Verdict } from '../domain/hold.ts';
import { onlyEditableChanged, sameArguments, withChanges } from '../domain/edits.ts';
import { decide } from '../domain/policy.ts';
import { compileRule, matchRules } from '../domain/rules.ts';
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import type { Sql } from '../store/db.ts';
import { approvalSeqsOf } from '../store/holds.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import { findTool } from '../store/tools.ts';
import { invalid } from './errors.ts';
import { sha256Hex } from './hashing.ts';

type Args = Record<string, unknown>;

/** The arguments a hold's call runs with: an approver's changes, or as submitted. */
export const argumentsToRun = (hold: Pick<Hold, 'arguments' | 'changedArguments'>): Args =>
  hold.changedArguments ?? hold.arguments;

/** What a page that offers a decision shows of the call: the hash of the arguments it runs with. */
export const shownArgumentsHash = (hold: Pick<Hold, 'arguments' | 'changedArguments'>) =>
  sha256Hex(canonicalJson(argumentsToRun(hold)));

/**
 * An approval of a call an approver changed (four eyes), with changes of its own or not, must come from
 * a page that showed it as changed (`shown`, its hash): a page, link or list line from before shows it
 * as it was, and nobody approves values they were not shown. (Slack, Teams, SMS and the widget refuse
 * such calls earlier; here, under the decision's lock, they are refused too.)
 */
export function checkShown(hold: Hold, input: { verdict: Verdict; shown?: string }): void {
  if (input.verdict !== 'approve') return;
  const current = shownArgumentsHash(hold);
  const changedSince = input.shown !== undefined && input.shown !== current;
  if (changedSince || (input.shown === undefined && hold.changedArguments !== null))
    throw invalid('shown', 'the call was changed since it was shown: open it again to see the changes');
}

/** The editable paths of the hold's rule as it is now (none for a hold decided by no rule). */
export async function editableOf(sql: Sql, hold: Hold): Promise<string[]> {
  if (hold.ruleName === null) return [];
  return (await editableByRule(sql, hold.workspaceId)).get(hold.ruleName) ?? [];
}

/** The editable paths of a workspace's approval rules, by rule name (for a list of holds). */
export async function editableByRule(sql: Sql, workspaceId: string): Promise<Map<string, string[]>> {
  const { rules } = await findRuleSet(sql, workspaceId);
  return new Map(
    rules.flatMap((rule) =>
      rule.effect === 'approval' && rule.editable ? [[rule.name, rule.editable]] : [],
    ),
  );
}

/**
 * The call's arguments after `changes` (argument path → new value) on the arguments as they are: null
 * when there are none, or they change nothing. Throws, naming the field, when a change is not one the
 * rule lets an approver make, or the changed call would no longer be held by the rule, or be denied.
 */
export async function changedArguments(
  sql: Sql,
  hold: Hold,
  verdict: Verdict,
  changes: Readonly<Args> | undefined,
): Promise<Args | null> {
  if (changes === undefined || Object.keys(changes).length === 0) return null;
  if (verdict !== 'approve') throw invalid('changes', 'only an approval may change the arguments');
  const editable = await editableOf(sql, hold);
  const other = Object.keys(changes).find((path) => !editable.includes(path));
  if (other !== undefined)
    throw invalid(`changes.${other}`, 'is not an argument this rule lets an approver change');
  const current = argumentsToRun(hold);
  const changed = withChanges(current, changes);
  if (changed === null) throw invalid('changes', 'a path runs through a value that is not an object');
  if (sameArguments(changed, current)) return null;
  // The rule may have lost an editable path since an earlier change: the submission is the reference.
  if (!onlyEditableChanged(hold.arguments, changed, editable))
    throw invalid('changes', 'only the arguments this rule lets an approver change may differ');
  await checkRulesAgain(sql, hold, changed);
  return changed;
}

/** An approval with changes: the hold's changed arguments, and what its evidence entry adds. */
export interface DecisionEdit {
  /** Null: changed back to the submitted arguments. */
  changedArguments: Args | null;
  evidence: Record<string, unknown>;
}

/** The decision's edit, checked (see `changedArguments`); null when it changes nothing. */
export async function decisionEdit(
  sql: Sql,
  hold: Hold,
  verdict: Verdict,
  changes: Readonly<Args> | undefined,
): Promise<DecisionEdit | null> {
  const changed = await changedArguments(sql, hold, verdict, changes);
  if (changed === null) return null;
  // The approvals of the call before (four eyes and more), which this one restarts.
  const superseded = await approvalSeqsOf(sql, hold.workspaceId, hold.id);
  const hash = (args: Args) => sha256Hex(canonicalJson(args));
  return {
    changedArguments: sameArguments(changed, hold.arguments) ? null : changed,
    // The call as changed, whole; the submitted one is in `hold.submitted` (docs/rules.md).
    evidence: {
      changed_arguments: changed,
      arguments_sha256: { submitted: hash(hold.arguments), changed: hash(changed) },
      ...(superseded.length > 0 && { superseded_approvals: superseded }),
    },
  };
}

/**
 * The changed call is decided as a submission would be (policy.ts; frequency is not counted): no deny
 * rule, the hold's rule still among the matches, and what decides it asks no more approvals and no
 * approver the hold does not have. Otherwise an approver could move a call past a stricter rule
 * (a payment raised past the threshold that needs the CFO) and approve it under their own.
 */
async function checkRulesAgain(sql: Sql, hold: Hold, args: Args): Promise<void> {
  const { rules } = await findRuleSet(sql, hold.workspaceId);
  const matches = matchRules(rules.map(compileRule), {
    connection: hold.connection,
    toolName: hold.toolName,
    agentId: hold.agentId,
    arguments: args,
  });
  const deny = matches.find((match) => match.rule.effect === 'deny');
  if (deny) throw invalid('changes', `the changed call would be denied by the rule "${deny.rule.name}"`);
  if (!matches.some((match) => match.rule.name === hold.ruleName))
    throw invalid('changes', `the changed call no longer matches the rule "${hold.ruleName}"`);
  const tool = await findTool(sql, hold.workspaceId, hold.connection, hold.toolName);
  const outcome = decide({ classification: tool?.classification ?? null, matches });
  const allowedApprovers = new Set(hold.approvers);
  const stricter =
    outcome.effect === 'deny' ||
    outcome.approvalsRequired > hold.approvalsRequired ||
    outcome.approvers.some((approver) => !allowedApprovers.has(approver));
  if (outcome.ruleName !== hold.ruleName && stricter)
    throw invalid(
      'changes',
      `the changed call would be held by the rule "${outcome.ruleName}", which asks more`,
    );
}
