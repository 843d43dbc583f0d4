/**
 * Notifying approvers (interface.md: humans decide through e-mail link, SMS, Slack, ...). Jobs are
 * written in the transaction of the hold change that causes them (here) and sent by the notification
 * worker, with retries (send-notifications.ts): nothing is lost on a restart. A hold decided anywhere
 * closes everywhere: its Slack messages are updated, links answer "already decided", and an outcome
 * mail follows.
 */
import type { Slack } from '../channels/slack.ts';
import type { Sms } from '../channels/sms.ts';
import type { Teams, TeamsTarget, TeamsVerifier } from '../channels/teams.ts';
import { type Hold, isApprover } from '../domain/hold.ts';
import { randomId } from '../domain/ids.ts';
import { quietUntil } from '../domain/quiet-hours.ts';
import type { Sql } from '../store/db.ts';
import { type DigestWindows, digestWindows } from '../store/digests.ts';
import { listMembersWithGroups, type Member } from '../store/members.ts';
import {
  insertNotification,
  insertNotificationStatement,
  listNotificationsOfHold,
  type NotificationChannel,
  type NotificationReason,
} from '../store/notifications.ts';
import type { Statement } from '../store/statements.ts';
import { countWorkspaces, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import { digestDueAt, digestWindowMs } from './digests.ts';
import { replyCodeFor, smsRepliesAllowed } from './reply-codes.ts';

/** The channels this deployment can send on (each needs its settings). */
export interface NotificationChannels {
  slack: { client: Slack; signingSecret: string; channel: string | null } | null;
  sms: { client: Sms; authToken: string; replies: boolean } | null;
  /** Microsoft Teams: the Bot Connector client, the check of its requests, and the tenant it serves. */
  teams: { client: Teams; verifier: TeamsVerifier; tenantId: string } | null;
  /** A factor on every retry delay (tests make retries fast). */
  retryScale: number;
}

function reachable(ctx: ServiceContext, member: Member, channel: NotificationChannel): boolean {
  if (channel === 'email') return ctx.mailer !== null;
  if (channel === 'sms') return ctx.channels.sms !== null && member.phone !== null;
  if (channel === 'teams') return ctx.channels.teams !== null && member.teamsUserId !== null;
  return ctx.channels.slack !== null && member.slackUserId !== null;
}

/**
 * When a message to the member may go out: now, or when their quiet hours end. A hold whose deadline
 * comes before then is urgent and goes now: waiting would let it expire unseen.
 */
export function sendableAt(member: Member, hold: Pick<Hold, 'expiresAt'>, now: number): number {
  const until = quietUntil(member.quietHours, member.timeZone, now);
  if (until === null || (hold.expiresAt !== null && hold.expiresAt <= until)) return now;
  return until;
}

/**
 * The Slack channel a workspace's waiting holds are posted to: its own, or SLACK_CHANNEL while the
 * deployment has no other workspace (checked at every post, so a workspace created by a process
 * without that setting never shares it).
 */
export async function slackChannelOf(
  sql: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
): Promise<string | null> {
  if (!ctx.channels.slack) return null;
  if (workspace.slackChannel) return workspace.slackChannel;
  const shared = ctx.channels.slack.channel;
  return shared && (await countWorkspaces(sql)) === 1 ? shared : null;
}

/** The Teams channel a workspace's waiting holds are posted to (there is no deployment-wide one). */
export function teamsChannelOf(ctx: ServiceContext, workspace: Workspace): TeamsTarget | null {
  return ctx.channels.teams && workspace.teamsChannel ? { channelId: workspace.teamsChannel } : null;
}

/**
 * The jobs that ask `members` to decide the hold (`request`) or remind them (`reminder`): one per member
 * and channel of theirs, each due when the member's quiet hours allow. Unless urgent, each is collected
 * for the member's digest of that channel (digests.ts) rather than sent on its own. `reason`: why the
 * members are asked besides the rule (an escalation step brought them in).
 */
export async function askMembers(
  tx: Sql,
  ctx: ServiceContext,
  hold: Hold,
  members: readonly Member[],
  kind: 'request' | 'reminder',
  reason: NotificationReason | null = null,
  /** The workspace's digest windows, when the caller read them already. */
  read?: DigestWindows,
): Promise<Statement[]> {
  const at = ctx.now();
  const replies = await smsRepliesAllowed(tx, ctx, hold);
  const windows = members.length > 0 ? (read ?? (await digestWindows(tx, hold.workspaceId, at))) : null;
  const jobs: Statement[] = [];
  const issued = new Set<string>();
  for (const member of members) {
    const sendable = sendableAt(member, hold, at);
    const windowMs = digestWindowMs(member, windows?.minutes ?? 0);
    for (const channel of new Set(member.channels)) {
      if (!reachable(ctx, member, channel)) continue;
      const openCloses =
        windowMs > 0 && hold.approvalsReceived === 0
          ? (windows?.closes.get(`${member.id} ${channel}`) ?? null)
          : null;
      const digestAt = digestDueAt(hold, windowMs, { now: at, sendable, openCloses });
      const collected = digestAt !== null;
      // A digest's text names no one hold: a collected text gets its code if it goes alone (digests.ts).
      const replyCode =
        channel === 'sms' && replies && !collected ? await replyCodeFor(tx, hold, member, issued) : null;
      const dueAt = digestAt ?? sendable;
      jobs.push(
        insertNotificationStatement({
          workspaceId: hold.workspaceId,
          holdId: hold.id,
          kind,
          at,
          dueAt,
          id: randomId('ntf_', 16),
          memberId: member.id,
          channel,
          replyCode,
          collected,
          reason,
        }),
      );
    }
  }
  return jobs;
}

/**
 * Who a pending hold waits for now: every member who may decide it (an approver, or a delegate for
 * one), except those out of office whose delegate may decide it in their place: the delegate is asked
 * instead. (A delegate who may not, say because their own agent asked, leaves the member asked.)
 */
export async function waitingFor(
  tx: Sql,
  ctx: ServiceContext,
  hold: Hold,
  decisions: { memberId: string; onBehalfOf: string | null }[] = [],
) {
  const deciders = await loadDeciders(tx, hold.workspaceId);
  const now = ctx.now();
  const able = new Set(
    deciders.members.filter((member) => deciders.capacity(hold, member, decisions, now).blocker === null),
  );
  return [...able].filter((member) => {
    const delegate = deciders.delegateOf(member, now);
    return !(delegate && able.has(delegate));
  });
}

/**
 * Inside the transaction that creates a pending hold: one job per approver and channel of theirs, as
 * statements that go with the hold's own writes (the submission holds its workspace's chain lock).
 */
export async function approverNotifications(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  hold: Hold,
): Promise<Statement[]> {
  if (hold.status !== 'pending') return [];
  const at = ctx.now();
  const base = { workspaceId: hold.workspaceId, holdId: hold.id, kind: 'request' as const, at };
  // The approvers and the digest windows are read together: one round trip on PostgreSQL.
  const [approvers, windows] = await Promise.all([
    waitingFor(tx, ctx, hold),
    digestWindows(tx, hold.workspaceId, at),
  ]);
  const jobs = await askMembers(tx, ctx, hold, approvers, 'request', null, windows);
  // The workspace's own channels: a post each, for no member.
  const posts: NotificationChannel[] = [];
  if (await slackChannelOf(tx, ctx, workspace)) posts.push('slack');
  if (teamsChannelOf(ctx, workspace)) posts.push('teams');
  for (const channel of posts)
    jobs.push(
      insertNotificationStatement({
        ...base,
        id: randomId('ntf_', 16),
        memberId: null,
        channel,
        replyCode: null,
      }),
    );
  return jobs;
}

/**
 * Inside the transaction of a recorded decision or an expiry: the hold's Slack messages are
 * refreshed, and once it is final, everyone who was asked by e-mail hears the outcome.
 */
export async function notifyChange(tx: Sql, ctx: ServiceContext, hold: Hold): Promise<void> {
  const sent = await listNotificationsOfHold(tx, hold.id);
  if (sent.length === 0) return;
  await refreshCards(tx, ctx, hold, sent);
  if (hold.status === 'pending') return;
  const base = { workspaceId: hold.workspaceId, holdId: hold.id, at: ctx.now(), replyCode: null };
  const asked = new Set(
    sent
      // A request still collected for a digest was never seen: its hold is left out of the digest.
      .filter((job) => job.channel === 'email' && job.kind === 'request' && job.state !== 'collected')
      .map((job) => job.memberId!),
  );
  for (const memberId of asked) {
    await insertNotification(tx, {
      ...base,
      id: randomId('ntf_', 16),
      memberId,
      channel: 'email',
      kind: 'outcome',
    });
  }
}

/**
 * Inside the transaction that recorded an approved call's outcome as unknown (sent upstream, never
 * answered): it may or may not have happened, so a person has to look. Every approver of the hold gets
 * an outcome e-mail saying so (whatever channels they chose for requests: no other channel has an
 * outcome message), and the hold's Slack messages show it.
 */
export async function notifyUnknownOutcome(tx: Sql, ctx: ServiceContext, hold: Hold): Promise<void> {
  const at = ctx.now();
  const base = { workspaceId: hold.workspaceId, holdId: hold.id, at, replyCode: null };
  await refreshCards(tx, ctx, hold, await listNotificationsOfHold(tx, hold.id));
  if (!ctx.mailer) return;
  for (const { member, groups } of await listMembersWithGroups(tx, hold.workspaceId)) {
    if (!isApprover(hold.approvers, member, groups)) continue;
    await insertNotification(tx, {
      ...base,
      id: randomId('ntf_', 16),
      memberId: member.id,
      channel: 'email',
      kind: 'outcome',
    });
  }
}

/** The channels whose messages carry the hold's state and buttons, and are updated in place. */
export const CARD_CHANNELS: readonly NotificationChannel[] = ['slack', 'teams'];

/** One `refresh` job per card channel the hold was posted to: its messages then show the hold as it is. */
async function refreshCards(
  tx: Sql,
  ctx: ServiceContext,
  hold: Hold,
  sent: { channel: NotificationChannel; kind: string }[],
): Promise<void> {
  for (const channel of CARD_CHANNELS) {
    if (!sent.some((job) => job.channel === channel && (job.kind === 'request' || job.kind === 'reminder')))
      continue;
    await insertNotification(tx, {
      workspaceId: hold.workspaceId,
      holdId: hold.id,
      at: ctx.now(),
      replyCode: null,
      id: randomId('ntf_', 16),
      memberId: null,
      channel,
      kind: 'refresh',
    });
  }
}
