/**
 * Decisions that arrive from a channel other than the app: a Slack or Teams button, an SMS reply code,
 * the widget. The transport has checked the provider's signature (or the embed token); here the
 * provider's user becomes a member, and a replayed callback changes nothing. A channel decides only
 * a hold it shows in full (decisions.md, "No decision on a summary"): the arguments never change, so
 * what its message showed is known here too, also for a message sent before that rule.
 */
import { channelSummary } from '../channels/messages.ts';
import type { Hold, Verdict } from '../domain/hold.ts';
import { base64url, randomBytes } from '../domain/ids.ts';
import type { TeamsCard } from '../channels/teams.ts';
import { teamsCard } from '../channels/teams-card.ts';
import { listHoldDecisions } from '../store/hold-decisions.ts';
import { findHold, findHoldByReference } from '../store/holds.ts';
import { findMember, findMemberByChatUser, findMemberIdsByPhone, type Member } from '../store/members.ts';
import { findWorkspace } from '../store/workspaces.ts';
import {
  deleteEmbedToken,
  type EmbedTokenSummary,
  findEmbedToken,
  findSmsRequestByCode,
  insertEmbedToken,
  listLiveEmbedTokens,
  rememberInbound,
  touchEmbedToken,
} from '../store/notifications.ts';
import type { ServiceContext } from './context.ts';
import {
  type DecisionInput,
  type DecisionResult,
  decideHold,
  recordDecision,
  settleDecision,
} from './decide-hold.ts';
import { notFound } from './errors.ts';
import { openChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
import { passkeyRequired } from './passkeys.ts';

/**
 * Whether the channel's message showed the call whole, as an approval would approve it: not once an
 * approver changed it (four eyes), since the message shows it as submitted; the page shows the change.
 */
const shownWhole = (hold: Hold, channel: 'slack' | 'sms' | 'widget') =>
  hold.changedArguments === null && channelSummary(hold, channel).complete;

const needsPasskey = async (ctx: ServiceContext, hold: Hold, verdict: Verdict) =>
  verdict === 'approve' && (await passkeyRequired(ctx.db, hold));

/**
 * `review_required`: the channel could not show every argument, or the call was changed since (an
 * approval with changes), so it may not decide.
 * `passkey_required`: the hold's rule (or the workspace) wants approvals signed with the member's passkey,
 * which a button or a code cannot carry: the member approves on the hold's page (rejecting still works).
 */
export type ChannelDecision =
  | DecisionResult
  | { outcome: 'unknown' }
  | { outcome: 'replayed' }
  | { outcome: 'review_required' }
  | { outcome: 'passkey_required' };

/** Decides once per replay key: the key is kept in the decision's own transaction. */
async function decideOnce(
  ctx: ServiceContext,
  input: DecisionInput,
  replayKey: string,
): Promise<ChannelDecision> {
  const result = await ctx.db.transaction(async (tx): Promise<DecisionResult | { outcome: 'replayed' }> => {
    const chain = await openChain(tx, ctx, input.workspaceId);
    if (!(await rememberInbound(tx, replayKey, ctx.now()))) return { outcome: 'replayed' };
    return recordDecision(tx, ctx, chain, input);
  });
  return result.outcome === 'replayed' ? result : settleDecision(ctx, input, result);
}

/** A Slack button: the hold named by its value, decided by the member with that Slack user id. */
export async function decideFromSlack(
  ctx: ServiceContext,
  input: { slackUserId: string; holdId: string; verdict: Verdict; replayKey: string },
): Promise<ChannelDecision> {
  const hold = await findHoldByReference(ctx.db, input.holdId);
  const member =
    hold && (await findMemberByChatUser(ctx.db, hold.workspaceId, { slackUserId: input.slackUserId }));
  if (!hold || !member) return { outcome: 'unknown' };
  if (!shownWhole(hold, 'slack')) return { outcome: 'review_required' };
  if (await needsPasskey(ctx, hold, input.verdict)) return { outcome: 'passkey_required' };
  return decideOnce(
    ctx,
    {
      workspaceId: hold.workspaceId,
      holdId: hold.id,
      memberId: member.id,
      verdict: input.verdict,
      channel: 'slack',
    },
    `slack:${input.replayKey}`,
  );
}

/** How old a Teams button press may be: an older one (held back, or replayed later) is refused. */
export const TEAMS_TOLERANCE_MS = 5 * 60_000;

/**
 * A Teams card's Approve or Reject (its token checked by the transport): the hold named in the card,
 * decided by the member mapped to the Teams user who pressed, in the tenant the deployment serves.
 * With the decision, the card that replaces the pressed one for that person.
 */
export async function decideFromTeams(
  ctx: ServiceContext,
  input: {
    aadObjectId: string;
    tenantId: string | null;
    holdId: string;
    verdict: Verdict;
    activityId: string;
    timestamp: number | null;
  },
): Promise<{ result: ChannelDecision | { outcome: 'stale' }; card: TeamsCard | null }> {
  const teams = ctx.channels.teams;
  // An object id names a person only in its tenant.
  if (!teams || input.tenantId?.toLowerCase() !== teams.tenantId.toLowerCase())
    return { result: { outcome: 'unknown' }, card: null };
  if (input.timestamp === null || Math.abs(ctx.now() - input.timestamp) > TEAMS_TOLERANCE_MS)
    return { result: { outcome: 'stale' }, card: null };
  const hold = await findHoldByReference(ctx.db, input.holdId);
  const member =
    hold && (await findMemberByChatUser(ctx.db, hold.workspaceId, { teamsUserId: input.aadObjectId }));
  if (!hold || !member) return { result: { outcome: 'unknown' }, card: null };
  if (!shownWhole(hold, 'slack')) return { result: { outcome: 'review_required' }, card: null };
  if (await needsPasskey(ctx, hold, input.verdict))
    return { result: { outcome: 'passkey_required' }, card: null };
  const result = await decideOnce(
    ctx,
    {
      workspaceId: hold.workspaceId,
      holdId: hold.id,
      memberId: member.id,
      verdict: input.verdict,
      channel: 'teams',
    },
    `teams:${input.activityId}`,
  );
  // A card answers a press that was recorded, or came after the member's or the hold's decision.
  if (result.outcome !== 'recorded' && result.outcome !== 'closed' && result.outcome !== 'already_decided')
    return { result, card: null };
  const now = result.hold;
  const workspace = await findWorkspace(ctx.db, now.workspaceId);
  const approvedBy = (await listHoldDecisions(ctx.db, now.id))
    .filter((decision) => decision.verdict === 'approve')
    .map((decision) => decision.name);
  const left = now.approvalsRequired - now.approvalsReceived;
  const final =
    now.status !== 'pending'
      ? undefined
      : result.outcome === 'recorded' || result.outcome === 'already_decided'
        ? `Recorded: ${left} more approval${left === 1 ? ' is' : 's are'} needed.`
        : undefined;
  const card = workspace
    ? teamsCard(workspace, now, {
        approvedBy,
        reviewUrl: `${ctx.publicUrl}/app/holds/${now.id}`,
        link: null,
        final,
      })
    : null;
  return { result, card };
}

export const REPLY_PATTERN = /^\s*(YES|NO)\s+(\d{4})\s*$/i;

/** An SMS reply `YES 4821` / `NO 4821` from a member's phone: the hold its code was sent for. */
export async function decideFromSms(
  ctx: ServiceContext,
  input: { from: string; body: string; messageId: string },
): Promise<ChannelDecision> {
  const reply = REPLY_PATTERN.exec(input.body);
  if (!reply) return { outcome: 'unknown' };
  const request = await findSmsRequestByCode(
    ctx.db,
    await findMemberIdsByPhone(ctx.db, input.from),
    reply[2]!,
  );
  if (!request?.memberId) return { outcome: 'unknown' };
  const hold = await findHoldByReference(ctx.db, request.holdId);
  if (hold && !shownWhole(hold, 'sms')) return { outcome: 'review_required' };
  const verdict = reply[1]!.toUpperCase() === 'YES' ? 'approve' : 'reject';
  if (hold && (await needsPasskey(ctx, hold, verdict))) return { outcome: 'passkey_required' };
  return decideOnce(
    ctx,
    {
      workspaceId: request.workspaceId,
      holdId: request.holdId,
      memberId: request.memberId,
      verdict,
      channel: 'sms',
    },
    `sms:${input.messageId}`,
  );
}

/**
 * A decision from the widget, as the embed token's member. Its API gives the summary only, so a hold
 * whose summary is not complete is refused to any caller, the widget's own script or another.
 */
export async function decideFromWidget(
  ctx: ServiceContext,
  member: Member,
  input: { holdId: string; verdict: Verdict; comment: string | null; changes?: Record<string, unknown> },
): Promise<DecisionResult | { outcome: 'review_required' } | { outcome: 'passkey_required' }> {
  const hold = await findHold(ctx.db, member.workspaceId, input.holdId);
  if (hold && !shownWhole(hold, 'widget')) return { outcome: 'review_required' };
  if (hold && (await needsPasskey(ctx, hold, input.verdict))) return { outcome: 'passkey_required' };
  return decideHold(ctx, {
    ...input,
    workspaceId: member.workspaceId,
    memberId: member.id,
    channel: 'widget',
  });
}

export const EMBED_TOKEN_TTL_MS = 12 * 3_600_000;

/** An embed token for the widget: the member's own, short-lived, shown once and stored as a hash. */
export async function mintEmbedToken(
  ctx: ServiceContext,
  member: Member,
): Promise<{ token: string; expiresAt: number }> {
  const token = `emb_${base64url(randomBytes(32))}`;
  const expiresAt = ctx.now() + EMBED_TOKEN_TTL_MS;
  await insertEmbedToken(ctx.db, {
    tokenHash: sha256Hex(token),
    workspaceId: member.workspaceId,
    memberId: member.id,
    createdAt: ctx.now(),
    expiresAt,
  });
  return { token, expiresAt };
}

/** A token's last use is written at most once a minute: the widget polls, and each read need not write. */
const LAST_USE_STEP_MS = 60_000;

/** The member an embed token stands for, while it lives (not revoked) and the member is still one. */
export async function memberOfEmbedToken(
  ctx: ServiceContext,
  token: string | undefined,
): Promise<Member | undefined> {
  if (!token || !/^emb_[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const tokenHash = sha256Hex(token);
  const row = await findEmbedToken(ctx.db, tokenHash);
  const now = ctx.now();
  if (!row || row.expiresAt <= now) return undefined;
  const member = await findMember(ctx.db, row.workspaceId, row.memberId);
  if (member && (row.lastUsedAt === null || now - row.lastUsedAt >= LAST_USE_STEP_MS))
    await touchEmbedToken(ctx.db, tokenHash, now);
  return member;
}

/** The embed tokens that still work that a member may see and revoke: an admin all of the workspace's. */
export async function embedTokensFor(ctx: ServiceContext, member: Member): Promise<EmbedTokenSummary[]> {
  const tokens = await listLiveEmbedTokens(ctx.db, member.workspaceId, ctx.now());
  return member.role === 'admin' ? tokens : tokens.filter((token) => token.memberId === member.id);
}

/** Revokes one embed token (named by its hash) that the member may revoke: the widget's next request with it is refused. */
export async function revokeEmbedToken(
  ctx: ServiceContext,
  member: Member,
  tokenHash: string,
): Promise<void> {
  const tokens = await embedTokensFor(ctx, member);
  if (!tokens.some((token) => token.tokenHash === tokenHash)) throw notFound('embed token');
  await deleteEmbedToken(ctx.db, tokenHash);
}
