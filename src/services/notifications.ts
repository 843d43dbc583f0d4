/**
 * Notifying approvers (interface.md: humans decide through e-mail link, SMS, Slack, ...). Jobs are
 * written in the transaction of the hold change that causes them (here) and sent by the notification
 * worker, with retries (send-notifications.ts): nothing is lost on a restart. A hold decided anywhere
 * closes everywhere: its Slack messages are updated, links answer "already decided", and an outcome
 * mail follows.
 */
import { randomInt } from 'node:crypto';
import { channelSummary } from '../channels/messages.ts';
import type { Slack } from '../channels/slack.ts';
import type { Sms } from '../channels/sms.ts';
import { type Hold, isApprover } from '../domain/hold.ts';
import { randomId } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import { listMembersWithGroups, type Member } from '../store/members.ts';
import {
  insertNotification,
  insertNotificationStatement,
  listNotificationsOfHold,
  type NotificationChannel,
  openReplyCodes,
} from '../store/notifications.ts';
import type { Statement } from '../store/statements.ts';
import { countWorkspaces, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';

/** The channels this deployment can send on (each needs its settings). */
export interface NotificationChannels {
  slack: { client: Slack; signingSecret: string; channel: string | null } | null;
  sms: { client: Sms; authToken: string; replies: boolean } | null;
  /** A factor on every retry delay (tests make retries fast). */
  retryScale: number;
}

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

/**
 * A code no other waiting hold sent to this phone uses (the same person may be a member of several
 * workspaces), so a reply names exactly one hold.
 */
async function newReplyCode(tx: Sql, phone: string, issued: Set<string>): Promise<string> {
  const taken = new Set(await openReplyCodes(tx, phone));
  for (;;) {
    const code = String(randomInt(1000, 10_000));
    // `issued`: codes of this transaction's jobs, not written yet (two members may share a phone).
    if (!taken.has(code) && !issued.has(`${phone} ${code}`)) {
      issued.add(`${phone} ${code}`);
      return code;
    }
  }
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
  // No reply code for a text that cannot show every argument: it decides nothing blind.
  const replies = ctx.channels.sms?.replies === true && channelSummary(hold, 'sms').complete;
  const jobs: Statement[] = [];
  const issued = new Set<string>();
  for (const { member, groups } of await listMembersWithGroups(tx, hold.workspaceId)) {
    if (!isApprover(hold.approvers, member, groups)) continue;
    for (const channel of new Set(member.channels)) {
      if (!reachable(ctx, member, channel)) continue;
      const replyCode = channel === 'sms' && replies ? await newReplyCode(tx, member.phone!, issued) : null;
      jobs.push(
        insertNotificationStatement({
          ...base,
          id: randomId('ntf_', 16),
          memberId: member.id,
          channel,
          replyCode,
        }),
      );
    }
  }
  if (await slackChannelOf(tx, ctx, workspace)) {
    jobs.push(
      insertNotificationStatement({
        ...base,
        id: randomId('ntf_', 16),
        memberId: null,
        channel: 'slack',
        replyCode: null,
      }),
    );
  }
  return jobs;
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
