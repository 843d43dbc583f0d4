/**
 * Decision links `/d/<token>` (decisions.md): sent by e-mail, SMS or Slack to one member for one
 * hold. Opening one (GET) never decides; it is single-use and dies at the hold's deadline.
 */
import type { Hold, Verdict } from '../domain/hold.ts';
import { base64url, randomBytes } from '../domain/ids.ts';
import { findHold } from '../store/holds.ts';
import { findMemberById, type Member } from '../store/members.ts';
import { findWorkspace, type Workspace } from '../store/workspaces.ts';
import { findDecisionToken, insertDecisionToken, markDecisionTokenUsed } from '../store/sessions.ts';
import type { ServiceContext } from './context.ts';
import { type DecisionResult, recordDecision, settleDecision } from './decide-hold.ts';
import { openChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';

export type LinkChannel = 'email' | 'sms' | 'slack' | 'teams';

export async function mintDecisionLink(
  ctx: ServiceContext,
  input: { hold: Hold; memberId: string; channel: LinkChannel },
): Promise<string> {
  const token = base64url(randomBytes(32));
  await insertDecisionToken(ctx.db, {
    tokenHash: sha256Hex(token),
    holdId: input.hold.id,
    memberId: input.memberId,
    channel: input.channel,
    createdAt: ctx.now(),
    expiresAt: input.hold.expiresAt ?? ctx.now(),
  });
  return `${ctx.publicUrl}/d/${token}`;
}

export type LinkState =
  | { state: 'invalid' }
  /** Used before, or its hold is decided or expired: the page shows the outcome. */
  | { state: 'closed'; hold: Hold; member: Member; workspace: Workspace }
  | { state: 'open'; hold: Hold; member: Member; workspace: Workspace; channel: LinkChannel };

export async function openDecisionLink(ctx: ServiceContext, token: string): Promise<LinkState> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { state: 'invalid' };
  const row = await findDecisionToken(ctx.db, sha256Hex(token));
  if (!row) return { state: 'invalid' };
  const member = await findMemberById(ctx.db, row.memberId);
  const [hold, workspace] = member
    ? await Promise.all([
        findHold(ctx.db, member.workspaceId, row.holdId),
        findWorkspace(ctx.db, member.workspaceId),
      ])
    : [];
  if (!member || !hold || !workspace) return { state: 'invalid' };
  const open = row.usedAt === null && row.expiresAt > ctx.now() && hold.status === 'pending';
  return open
    ? { state: 'open', hold, member, workspace, channel: row.channel as LinkChannel }
    : { state: 'closed', hold, member, workspace };
}

export type LinkDecision = { outcome: 'invalid' } | { outcome: 'used' } | DecisionResult;

/** Decides as the link's member, once: the link is used up in the same transaction as the decision. */
export async function decideByLink(
  ctx: ServiceContext,
  token: string,
  input: {
    verdict: Verdict;
    comment?: string | null;
    passkey?: unknown;
    changes?: Record<string, unknown>;
    /** The hash of the arguments the link's page showed (decision-changes.ts, `checkShown`). */
    shown?: string;
  },
): Promise<LinkDecision> {
  const opened = await openDecisionLink(ctx, token);
  if (opened.state === 'invalid') return { outcome: 'invalid' };
  const { hold, member } = opened;
  const decision = {
    workspaceId: member.workspaceId,
    holdId: hold.id,
    memberId: member.id,
    verdict: input.verdict,
    comment: input.comment,
    passkey: input.passkey,
    changes: input.changes,
    shown: input.shown,
  };
  const result = await ctx.db.transaction(async (tx): Promise<LinkDecision> => {
    const chain = await openChain(tx, ctx, member.workspaceId);
    const row = await findDecisionToken(tx, sha256Hex(token), true);
    if (!row) return { outcome: 'invalid' };
    if (row.usedAt !== null) return { outcome: 'used' };
    const recorded = await recordDecision(tx, ctx, chain, {
      ...decision,
      channel: row.channel as LinkChannel,
    });
    if (recorded.outcome === 'recorded') await markDecisionTokenUsed(tx, sha256Hex(token), ctx.now());
    return recorded;
  });
  return result.outcome === 'invalid' || result.outcome === 'used'
    ? result
    : settleDecision(ctx, decision, result);
}
