/**
 * Notifying approvers (interface.md: humans decide through e-mail link, SMS, Slack, ...). Jobs are
 * written in the transaction of the hold change that causes them and sent by the notification
 * worker, with retries: nothing is lost on a restart. A hold decided anywhere closes everywhere:
 * its Slack messages are updated, links answer "already decided", and an outcome mail follows.
 */
import { randomInt } from 'node:crypto';
import {
  channelSummary,
  outcomeMail,
  requestMail,
  slackMessage,
  smsText,
  unknownOutcomeMail,
} from '../channels/messages.ts';
import type { Slack, SlackPosted } from '../channels/slack.ts';
import type { Sms } from '../channels/sms.ts';
import { outcomeUnknown } from '../domain/envelope.ts';
import { type Hold, isApprover } from '../domain/hold.ts';
import { randomId } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import { findHoldByReference, listHoldDecisions } from '../store/holds.ts';
import { findMemberById, listMembers, type Member } from '../store/members.ts';
import {
  anyDueNotification,
  claimDueNotifications,
  findNotification,
  finishNotification,
  insertNotification,
  listNotificationsOfHold,
  type Notification,
  type NotificationChannel,
  openReplyCodes,
  postponeNotification,
  retryNotification,
} from '../store/notifications.ts';
import { listGroups } from '../store/rule-sets.ts';
import { countWorkspaces, findWorkspace, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { mintDecisionLink } from './decision-links.ts';
import { mailSignInLinks } from './sign-in.ts';

/** The channels this deployment can send on (each needs its settings). */
export interface NotificationChannels {
  slack: { client: Slack; signingSecret: string; channel: string | null } | null;
  sms: { client: Sms; authToken: string; replies: boolean } | null;
  /** A factor on every retry delay (tests make retries fast). */
  retryScale: number;
}

const CLAIM_MS = 60_000;
export const MAX_NOTIFICATION_ATTEMPTS = 10;

/** 5 s, 10 s, 20 s, ... capped at an hour. */
export const notificationRetryDelay = (attempt: number, scale: number) =>
  Math.round(Math.min(3_600_000, 5_000 * 2 ** (attempt - 1)) * scale);

function reachable(ctx: ServiceContext, member: Member, channel: NotificationChannel): boolean {
  if (channel === 'email') return ctx.mailer !== null;
  if (channel === 'sms') return ctx.channels.sms !== null && member.phone !== null;
  return ctx.channels.slack !== null && member.slackUserId !== null;
}

/**
 * The Slack channel a workspace's waiting holds are posted to: its own, or SLACK_CHANNEL while the
 * deployment has no other workspace (checked at every post, so a workspace created by a process
 * without that setting never shares it).
 */
async function slackChannelOf(sql: Sql, ctx: ServiceContext, workspace: Workspace): Promise<string | null> {
  if (!ctx.channels.slack) return null;
  if (workspace.slackChannel) return workspace.slackChannel;
  const shared = ctx.channels.slack.channel;
  return shared && (await countWorkspaces(sql)) === 1 ? shared : null;
}

/**
 * A code no other waiting hold sent to this phone uses (the same person may be a member of several
 * workspaces), so a reply names exactly one hold.
 */
async function newReplyCode(tx: Sql, phone: string): Promise<string> {
  const taken = new Set(await openReplyCodes(tx, phone));
  for (;;) {
    const code = String(randomInt(1000, 10_000));
    if (!taken.has(code)) return code;
  }
}

/** Inside the transaction that created a pending hold: one job per approver and channel of theirs. */
export async function notifyApprovers(tx: Sql, ctx: ServiceContext, hold: Hold): Promise<void> {
  if (hold.status !== 'pending') return;
  const groups = await listGroups(tx, hold.workspaceId);
  const at = ctx.now();
  const base = { workspaceId: hold.workspaceId, holdId: hold.id, kind: 'request' as const, at };
  // No reply code for a text that cannot show every argument: it decides nothing blind.
  const replies = ctx.channels.sms?.replies === true && channelSummary(hold, 'sms').complete;
  for (const member of await listMembers(tx, hold.workspaceId)) {
    const memberGroups = [...groups].filter(([, ids]) => ids.includes(member.id)).map(([name]) => name);
    if (!isApprover(hold.approvers, member, memberGroups)) continue;
    for (const channel of new Set(member.channels)) {
      if (!reachable(ctx, member, channel)) continue;
      const replyCode = channel === 'sms' && replies ? await newReplyCode(tx, member.phone!) : null;
      await insertNotification(tx, {
        ...base,
        id: randomId('ntf_', 16),
        memberId: member.id,
        channel,
        replyCode,
      });
    }
  }
  const workspace = await findWorkspace(tx, hold.workspaceId);
  if (workspace && (await slackChannelOf(tx, ctx, workspace))) {
    await insertNotification(tx, {
      ...base,
      id: randomId('ntf_', 16),
      memberId: null,
      channel: 'slack',
      replyCode: null,
    });
  }
}

/**
 * Inside the transaction of a recorded decision or an expiry: the hold's Slack messages are
 * refreshed, and once it is final, everyone who was asked by e-mail hears the outcome.
 */
export async function notifyChange(tx: Sql, ctx: ServiceContext, hold: Hold): Promise<void> {
  const sent = await listNotificationsOfHold(tx, hold.id);
  if (sent.length === 0) return;
  const at = ctx.now();
  const base = { workspaceId: hold.workspaceId, holdId: hold.id, at, replyCode: null };
  if (sent.some((job) => job.channel === 'slack' && job.kind === 'request')) {
    await insertNotification(tx, {
      ...base,
      id: randomId('ntf_', 16),
      memberId: null,
      channel: 'slack',
      kind: 'refresh',
    });
  }
  if (hold.status === 'pending') return;
  const asked = new Set(
    sent.filter((job) => job.channel === 'email' && job.kind === 'request').map((job) => job.memberId!),
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
  const sent = await listNotificationsOfHold(tx, hold.id);
  if (sent.some((job) => job.channel === 'slack' && job.kind === 'request')) {
    await insertNotification(tx, {
      ...base,
      id: randomId('ntf_', 16),
      memberId: null,
      channel: 'slack',
      kind: 'refresh',
    });
  }
  if (!ctx.mailer) return;
  const groups = await listGroups(tx, hold.workspaceId);
  for (const member of await listMembers(tx, hold.workspaceId)) {
    const memberGroups = [...groups].filter(([, ids]) => ids.includes(member.id)).map(([name]) => name);
    if (!isApprover(hold.approvers, member, memberGroups)) continue;
    await insertNotification(tx, {
      ...base,
      id: randomId('ntf_', 16),
      memberId: member.id,
      channel: 'email',
      kind: 'outcome',
    });
  }
}

export async function claimNotifications(ctx: ServiceContext, limit: number): Promise<string[]> {
  // Most rounds (every hold change starts one) find nothing due.
  if (!(await anyDueNotification(ctx.db, ctx.now()))) return [];
  return ctx.db.transaction((tx) => claimDueNotifications(tx, ctx.now(), CLAIM_MS, limit));
}

/** One attempt at one job; a failure is retried on the schedule, then the job is given up. */
export async function sendNotification(ctx: ServiceContext, id: string): Promise<void> {
  const job = await findNotification(ctx.db, id);
  if (job?.state !== 'pending') return;
  try {
    const outcome = await attempt(ctx, job);
    if (outcome === 'postpone') {
      await postponeNotification(ctx.db, id, ctx.now() + Math.max(50, 2_000 * ctx.channels.retryScale));
      return;
    }
    await finishNotification(ctx.db, id, { ...outcome, at: ctx.now() });
  } catch (error) {
    const attempts = job.attempts + 1;
    await retryNotification(ctx.db, id, {
      error: error instanceof Error ? error.message : 'send failed',
      nextAttemptAt:
        attempts >= MAX_NOTIFICATION_ATTEMPTS
          ? null
          : ctx.now() + notificationRetryDelay(attempts, ctx.channels.retryScale),
    });
    throw error;
  }
}

type Attempt = { state: 'sent' | 'skipped'; messageRef?: string } | 'postpone';

async function attempt(ctx: ServiceContext, job: Notification): Promise<Attempt> {
  // Only sign-in mails are about no hold.
  if (job.holdId === null) return { state: await mailSignInLinks(ctx, job.memberId) };
  const hold = await findHoldByReference(ctx.db, job.holdId);
  const workspace = hold && (await findWorkspace(ctx.db, hold.workspaceId));
  if (!hold || !workspace) return { state: 'skipped' };
  const member = job.memberId ? await findMemberById(ctx.db, job.memberId) : undefined;
  // A request for a hold already closed would offer a decision nobody can make any more.
  if (job.kind === 'request' && hold.status !== 'pending') return { state: 'skipped' };

  if (job.channel === 'email') {
    if (!ctx.mailer || !member) return { state: 'skipped' };
    const message =
      job.kind === 'request'
        ? requestMail(
            workspace,
            hold,
            await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'email' }),
          )
        : outcomeUnknown(hold)
          ? unknownOutcomeMail(workspace, hold, `${ctx.publicUrl}/app/holds/${hold.id}`)
          : outcomeMail(workspace, hold);
    await ctx.mailer.send({ to: member.email, ...message });
    return { state: 'sent' };
  }

  if (job.channel === 'sms') {
    const sms = ctx.channels.sms;
    if (!sms || !member?.phone) return { state: 'skipped' };
    const link = await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'sms' });
    const sent = await sms.client.send(member.phone, smsText(hold, link, job.replyCode));
    return { state: 'sent', messageRef: JSON.stringify({ sid: sent.sid }) };
  }

  const slack = ctx.channels.slack;
  if (!slack) return { state: 'skipped' };
  const reviewUrl = `${ctx.publicUrl}/app/holds/${hold.id}`;
  const approvedBy = (await listHoldDecisions(ctx.db, hold.id))
    .filter((decision) => decision.verdict === 'approve')
    .map((decision) => decision.name);
  if (job.kind === 'request') {
    const target = member ? member.slackUserId : await slackChannelOf(ctx.db, ctx, workspace);
    if (!target) return { state: 'skipped' };
    const link = member ? await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'slack' }) : null;
    const posted = await slack.client.post(
      target,
      slackMessage(workspace, hold, link, approvedBy, reviewUrl),
    );
    return { state: 'sent', messageRef: JSON.stringify(posted) };
  }
  // refresh: wait until every request of the hold is posted (or given up), and until a refresh that
  // started first is done: one at a time per hold, each reading the hold when it starts, so the
  // last update written shows the latest state.
  const jobs = await listNotificationsOfHold(ctx.db, hold.id);
  const requests = jobs.filter((other) => other.channel === 'slack' && other.kind === 'request');
  const mine = [job.claimedUntil ?? 0, job.id] as const;
  const refreshing = jobs.some(
    (other) =>
      other.kind === 'refresh' &&
      other.id !== job.id &&
      other.state === 'pending' &&
      other.claimedUntil !== null &&
      other.claimedUntil > ctx.now() &&
      (other.claimedUntil < mine[0] || (other.claimedUntil === mine[0] && other.id < mine[1])),
  );
  if (refreshing || requests.some((request) => request.state === 'pending')) return 'postpone';
  for (const request of requests) {
    if (request.state !== 'sent' || !request.messageRef) continue;
    await slack.client.update(
      JSON.parse(request.messageRef) as SlackPosted,
      slackMessage(workspace, hold, null, approvedBy, reviewUrl),
    );
  }
  return { state: 'sent' };
}
