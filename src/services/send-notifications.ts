/**
 * Sending the notification jobs that notifications.ts writes with each hold change: the notification
 * worker claims due jobs and makes one attempt at each, minting the decision links they carry; a
 * failure is retried on a schedule, then the job is given up.
 */
import {
  type Asking,
  outcomeMail,
  type Principal,
  requestMail,
  slackMessage,
  smsText,
  unknownOutcomeMail,
} from '../channels/messages.ts';
import {
  type DigestEntry,
  type DigestLine,
  digestMail,
  linkedLines,
  slackDigest,
  smsDigest,
  teamsDigest,
} from '../channels/digest-messages.ts';
import type { SlackPosted } from '../channels/slack.ts';
import type { TeamsPosted } from '../channels/teams.ts';
import { teamsCard } from '../channels/teams-card.ts';
import { type Backoff, backoffDelay } from '../domain/backoff.ts';
import { outcomeUnknown } from '../domain/envelope.ts';
import type { Hold } from '../domain/hold.ts';
import { listHoldDecisions, listPastDecisions } from '../store/hold-decisions.ts';
import { findHoldByReference } from '../store/holds.ts';
import { findMemberById, type Member } from '../store/members.ts';
import {
  findNotification,
  finishNotification,
  listNotificationsOfHold,
  type Notification,
  postponeNotification,
  retryNotification,
} from '../store/notifications.ts';
import { listDigestItems } from '../store/digests.ts';
import { anyDue, claimDue } from '../store/outbox.ts';
import { findWorkspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import { mintDecisionLink } from './decision-links.ts';
import { slackChannelOf } from './notifications.ts';
import { passkeyRequired } from './passkeys.ts';
import { editableOf } from './decision-changes.ts';
import { mailSignInLinks } from './sign-in.ts';
import { teamsRecipient } from './teams-channel.ts';
import { inSpan } from '../telemetry/tracing.ts';

const CLAIM_MS = 60_000;
export const MAX_NOTIFICATION_ATTEMPTS = 10;

/** 5 s, 10 s, 20 s, ... capped at an hour. */
const SEND_RETRIES: Backoff = { firstMs: 5_000, longestMs: 3_600_000 };

export async function claimNotifications(ctx: ServiceContext, limit: number): Promise<string[]> {
  // Most rounds (every hold change starts one) find nothing due.
  if (!(await anyDue(ctx.db, 'notifications', ctx.now()))) return [];
  return ctx.db.transaction((tx) =>
    claimDue(tx, 'notifications', { now: ctx.now(), claimMs: CLAIM_MS, limit }),
  );
}

/** One attempt at one job; a failure is retried on the schedule, then the job is given up. */
export async function sendNotification(ctx: ServiceContext, id: string): Promise<void> {
  const job = await findNotification(ctx.db, id);
  if (job?.state !== 'pending') return;
  try {
    // Traced: a message is an outbound call of the hold's (its HTTP or SMTP request is a child span).
    const outcome = await inSpan(
      'notification send',
      { 'notification.channel': job.channel, 'notification.kind': job.kind, 'hold.id': job.holdId ?? '' },
      () => attempt(ctx, job),
    );
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
          : ctx.now() + backoffDelay(SEND_RETRIES, attempts, { scale: ctx.channels.retryScale }),
    });
    throw error;
  }
}

/** A reminder's line: how long is left to decide, who approved so far. */
const reminderOf = (ctx: ServiceContext, job: Notification, hold: Hold, approvedBy: string[]) =>
  job.kind === 'reminder' && hold.expiresAt !== null
    ? { leftMs: hold.expiresAt - ctx.now(), approvedBy }
    : undefined;

type Attempt = { state: 'sent' | 'skipped'; messageRef?: string } | 'postpone';

/** What only the hold's page can do for a pending hold, which its messages then say. */
const onlyOnThePage = async (ctx: ServiceContext, hold: Hold) => ({
  // Buttons and reply codes cannot carry a passkey signature: such a hold's messages link to its page.
  signed: await passkeyRequired(ctx.db, hold),
  // Nor change arguments (a rule's `editable`).
  editable: (await editableOf(ctx.db, hold)).length > 0,
});

async function attempt(ctx: ServiceContext, job: Notification): Promise<Attempt> {
  if (job.kind === 'digest') return sendDigest(ctx, job);
  // Only sign-in mails and digests are about no hold.
  if (job.holdId === null) return { state: await mailSignInLinks(ctx, job.memberId) };
  const hold = await findHoldByReference(ctx.db, job.holdId);
  const workspace = hold && (await findWorkspace(ctx.db, hold.workspaceId));
  if (!hold || !workspace) return { state: 'skipped' };
  const member = job.memberId ? await findMemberById(ctx.db, job.memberId) : undefined;
  const asks = job.kind === 'request' || job.kind === 'reminder';
  // A request for a hold already closed would offer a decision nobody can make any more; one held back
  // by quiet hours, to a member who has decided since (or may no longer), would ask for nothing.
  if (asks && hold.status !== 'pending') return { state: 'skipped' };
  const reader = asks && member ? await readerOf(ctx, hold, member) : null;
  if (reader && !reader.mayDecide) return { state: 'skipped' };
  const approvedBy = asks || job.kind === 'refresh' ? await approverNames(ctx, hold.id) : [];
  const pageOnly = hold.status === 'pending' ? await onlyOnThePage(ctx, hold) : {};
  const asking: Asking = {
    reminder: reminderOf(ctx, job, hold, approvedBy),
    forWhom: reader?.forWhom,
    escalated: job.reason === 'escalated',
    ...pageOnly,
  };

  if (job.channel === 'email') {
    if (!ctx.mailer || !member) return { state: 'skipped' };
    const message = asks
      ? requestMail(
          workspace,
          hold,
          await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'email' }),
          asking,
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
    const sent = await sms.client.send(member.phone, smsText(hold, link, job.replyCode, asking));
    return { state: 'sent', messageRef: JSON.stringify({ sid: sent.sid }) };
  }

  const reviewUrl = `${ctx.publicUrl}/app/holds/${hold.id}`;
  if (job.channel === 'teams') {
    const teams = ctx.channels.teams;
    if (!teams) return { state: 'skipped' };
    const card = (link: string | null) =>
      teamsCard(workspace, hold, { approvedBy, reviewUrl, link, ...asking });
    if (asks) {
      const to = await teamsRecipient(ctx, job, hold, workspace, member);
      if (!to) return { state: 'skipped' };
      const posted = await teams.client.post(to.target, card(to.link));
      return { state: 'sent', messageRef: JSON.stringify(posted) };
    }
    const posts = await postsToRefresh(ctx, job, hold.id);
    if (posts === 'postpone') return posts;
    for (const posted of posts) await teams.client.update(posted as TeamsPosted, card(null));
    return { state: 'sent' };
  }

  const slack = ctx.channels.slack;
  if (!slack) return { state: 'skipped' };
  if (asks) {
    // A member's job goes to that member or nowhere (removed since: nowhere), never to the channel.
    const target = job.memberId ? member?.slackUserId : await slackChannelOf(ctx.db, ctx, workspace);
    if (!target) return { state: 'skipped' };
    const link = member ? await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'slack' }) : null;
    const posted = await slack.client.post(
      target,
      slackMessage(workspace, hold, link, approvedBy, reviewUrl, asking),
    );
    return { state: 'sent', messageRef: JSON.stringify(posted) };
  }
  const posts = await postsToRefresh(ctx, job, hold.id);
  if (posts === 'postpone') return posts;
  for (const posted of posts) {
    await slack.client.update(
      posted as SlackPosted,
      slackMessage(workspace, hold, null, approvedBy, reviewUrl, pageOnly),
    );
  }
  return { state: 'sent' };
}

/**
 * A digest: the holds of its items that still wait for its member, in one message, each line shown
 * with a decision link of its own; a hold decided (or no longer theirs) since it was collected is left
 * out. Links are minted only for the lines the message shows, once it is sure to go.
 */
async function sendDigest(ctx: ServiceContext, job: Notification): Promise<Attempt> {
  const member = await findMemberById(ctx.db, job.memberId!);
  const workspace = member && (await findWorkspace(ctx.db, member.workspaceId));
  if (!member || !workspace) return { state: 'skipped' };
  const lines = await digestLines(ctx, job, member);
  if (lines.length === 0) return { state: 'skipped' };
  const channel = job.channel;
  const linked = async () => {
    const entries: DigestEntry[] = [];
    for (const line of linkedLines(channel, lines)) {
      const link = await mintDecisionLink(ctx, { hold: line.hold, memberId: member.id, channel });
      entries.push({ ...line, link });
    }
    return entries;
  };
  const inboxUrl = `${ctx.publicUrl}/app/inbox`;
  const at = [ctx.now(), member.timeZone] as const;
  if (channel === 'email') {
    if (!ctx.mailer) return { state: 'skipped' };
    await ctx.mailer.send({ to: member.email, ...digestMail(workspace, await linked(), ...at) });
    return { state: 'sent' };
  }
  if (channel === 'sms') {
    if (!ctx.channels.sms || !member.phone) return { state: 'skipped' };
    const sent = await ctx.channels.sms.client.send(member.phone, smsDigest(lines, inboxUrl, ...at));
    return { state: 'sent', messageRef: JSON.stringify({ sid: sent.sid }) };
  }
  if (channel === 'teams') {
    if (!ctx.channels.teams || !member.teamsUserId) return { state: 'skipped' };
    const card = teamsDigest(workspace, lines, await linked(), inboxUrl, ...at);
    return {
      state: 'sent',
      messageRef: JSON.stringify(await ctx.channels.teams.client.post({ userId: member.teamsUserId }, card)),
    };
  }
  if (!ctx.channels.slack || !member.slackUserId) return { state: 'skipped' };
  const message = slackDigest(workspace, lines, await linked(), inboxUrl, ...at);
  return {
    state: 'sent',
    messageRef: JSON.stringify(await ctx.channels.slack.client.post(member.slackUserId, message)),
  };
}

/** The lines of a digest job: its items' holds that still wait for its member, oldest first. */
async function digestLines(ctx: ServiceContext, job: Notification, member: Member): Promise<DigestLine[]> {
  const lines: DigestLine[] = [];
  for (const item of await listDigestItems(ctx.db, job.workspaceId, job.id)) {
    const hold = await findHoldByReference(ctx.db, item.holdId!);
    if (hold?.status !== 'pending') continue;
    const reader = await readerOf(ctx, hold, member);
    if (!reader.mayDecide) continue;
    const reminder =
      item.kind === 'reminder' ? reminderOf(ctx, item, hold, await approverNames(ctx, hold.id)) : undefined;
    lines.push({
      hold,
      asking: { reminder, forWhom: reader.forWhom, escalated: item.reason === 'escalated' },
    });
  }
  return lines;
}

/** Whether the member may still decide the hold as the message goes out, and for whom as a delegate. */
async function readerOf(
  ctx: ServiceContext,
  hold: Hold,
  member: Member,
): Promise<{ mayDecide: boolean; forWhom?: Principal }> {
  const deciders = await loadDeciders(ctx.db, hold.workspaceId);
  const decider = deciders.byId.get(member.id);
  if (!decider) return { mayDecide: false };
  const capacity = deciders.capacity(hold, decider, await listPastDecisions(ctx.db, hold.id), ctx.now());
  if (capacity.blocker !== null) return { mayDecide: false };
  const principal = capacity.onBehalfOf && deciders.byId.get(capacity.onBehalfOf.id);
  return {
    mayDecide: true,
    forWhom: principal?.delegation ? { name: principal.name, until: principal.delegation.until } : undefined,
  };
}

/** Who approved the hold so far, by name (four-eyes), for what a message shows. */
const approverNames = async (ctx: ServiceContext, holdId: string) =>
  (await listHoldDecisions(ctx.db, holdId))
    .filter((decision) => decision.verdict === 'approve')
    .map((decision) => decision.name);

/**
 * The messages a `refresh` job updates: every request and reminder of its hold posted on its channel.
 * Postponed until each of them is posted (or given up), and until a refresh that started first is done:
 * one at a time per hold and channel, each reading the hold when it starts, so the last update written
 * shows the latest state.
 */
async function postsToRefresh(ctx: ServiceContext, job: Notification, holdId: string) {
  const jobs = (await listNotificationsOfHold(ctx.db, holdId)).filter(
    (other) => other.channel === job.channel,
  );
  const posts = jobs.filter((other) => other.kind === 'request' || other.kind === 'reminder');
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
  // A post still waiting for its member's quiet hours to end will show the hold as it is when sent.
  const unsent = posts.some((post) => post.state === 'pending' && post.nextAttemptAt <= ctx.now());
  if (refreshing || unsent) return 'postpone' as const;
  return posts
    .filter((post) => post.state === 'sent' && post.messageRef)
    .map((post) => JSON.parse(post.messageRef!) as unknown);
}
