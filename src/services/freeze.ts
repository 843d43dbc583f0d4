/**
 * The kill switch (docs/security.md, "An admin can stop every agent at once"): freezing a workspace
 * denies every new hold (submit-hold.ts reads it under the chain lock taken here too) and stops its
 * approved MCP calls from running (execute-approved.ts checks it under the same lock); unfreezing lets
 * those calls run. Each is evidenced (`workspace.frozen`, `workspace.unfrozen`: who and why) and sent
 * as a webhook event, in the transaction that makes the change.
 */
import { type Freeze, freezeEventBody, MAX_FREEZE_REASON } from '../domain/freeze.ts';
import { listHoldsToExecute } from '../store/hold-sweeps.ts';
import { writeTogether } from '../store/statements.ts';
import { findWorkspace, updateWorkspaceFrozen, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { invalid, notFound } from './errors.ts';
import { lockChain } from './evidence.ts';
import { evidenceEventStatements } from './evidence-events.ts';

export interface FreezeState {
  workspace: string;
  frozen: boolean;
  frozen_at: string | null;
  reason: string | null;
  by: string | null;
  /** False when it already was so: nothing was recorded. */
  changed: boolean;
}

/** The freeze of a workspace as read with it, or null. */
const freezeOf = (workspace: Workspace): Freeze | null =>
  workspace.frozenAt === null
    ? null
    : { at: workspace.frozenAt, reason: workspace.frozenReason ?? '', by: workspace.frozenBy ?? '' };

const stateOf = (slug: string, freeze: Freeze | null, changed: boolean): FreezeState => ({
  workspace: slug,
  frozen: freeze !== null,
  frozen_at: freeze && new Date(freeze.at).toISOString(),
  reason: freeze?.reason ?? null,
  by: freeze?.by ?? null,
  changed,
});

/**
 * Freezes (`reason` given) or unfreezes (null) the workspace, as `by` (who, as evidence names them).
 * Freezing a frozen workspace, or unfreezing one that is not, changes and records nothing.
 */
async function setFrozen(
  ctx: ServiceContext,
  workspace: Workspace,
  change: { reason: string | null; by: string },
): Promise<FreezeState> {
  const now = ctx.now();
  return ctx.db.transaction(async (tx) => {
    // The chain lock first: a submission holding it finishes before the freeze, and one after it sees it.
    const chain = await lockChain(tx, ctx, workspace.id);
    const current = await findWorkspace(tx, workspace.id);
    if (!current) throw notFound('workspace');
    const before = freezeOf(current);
    const freezing = change.reason !== null;
    if (freezing === (before !== null)) return stateOf(current.slug, before, false);
    const after = freezing ? { at: now, reason: change.reason!, by: change.by } : null;
    await updateWorkspaceFrozen(tx, workspace.id, after);
    const entry = chain.append(freezing ? 'workspace.frozen' : 'workspace.unfrozen', {
      reason: change.reason,
      by: change.by,
    });
    const body = freezeEventBody(
      workspace.id,
      { frozen: freezing, reason: change.reason, by: change.by, seq: entry.seq },
      now,
    );
    await writeTogether(tx, ctx.db.dialect, [
      ...chain.writes(),
      ...(await evidenceEventStatements(tx, workspace.id, body, now)),
    ]);
    return stateOf(current.slug, after, true);
  });
}

export async function freezeWorkspace(
  ctx: ServiceContext,
  workspace: Workspace,
  input: { reason: string; by: string },
): Promise<FreezeState> {
  const reason = input.reason.trim();
  if (reason === '' || reason.length > MAX_FREEZE_REASON)
    throw invalid('reason', `must be 1-${MAX_FREEZE_REASON} characters: why the workspace is frozen`);
  const state = await setFrozen(ctx, workspace, { reason, by: input.by });
  // This instance's workers deliver the event now, and its open app pages show the banner.
  if (state.changed) ctx.holdEvents.wakeAll();
  return state;
}

export async function unfreezeWorkspace(
  ctx: ServiceContext,
  workspace: Workspace,
  input: { by: string },
): Promise<FreezeState> {
  const state = await setFrozen(ctx, workspace, { reason: null, by: input.by });
  if (!state.changed) return state;
  // The approved calls that waited go now: each wakes the execution workers of every instance.
  for (const hold of await listHoldsToExecute(ctx.db, 100, workspace.id))
    ctx.holdEvents.publish(hold.id, workspace.id);
  ctx.holdEvents.wakeAll();
  return state;
}
