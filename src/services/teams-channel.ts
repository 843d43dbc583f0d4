/**
 * The Teams channel a workspace's waiting holds are posted to (`teams: { channel }` in its workspace
 * file; `teamsChannelOf` in notifications.ts, beside the Slack one), as its Slack channel: one card per hold
 * that waits for people, sent through the outbox with the approvers' own cards and updated in place with
 * them (refresh jobs, send-notifications.ts). A press on it decides as the member whose `teams_user_id`
 * pressed (channel-decisions.ts), as on a personal card.
 */
import type { TeamsTarget } from '../channels/teams.ts';
import type { Hold } from '../domain/hold.ts';
import type { Member } from '../store/members.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { mintDecisionLink } from './decision-links.ts';
import { teamsChannelOf } from './notifications.ts';

/**
 * Where a request's or reminder's card goes, and the decision link it carries: the member's own chat
 * with theirs, or, for the job of no member, the workspace's channel with none (anyone there may read it).
 * Null when there is nowhere to send it (a member removed since, or no longer mapped to a Teams user).
 */
export async function teamsRecipient(
  ctx: ServiceContext,
  job: { memberId: string | null },
  hold: Hold,
  workspace: Workspace,
  member: Member | undefined,
): Promise<{ target: TeamsTarget; link: string | null } | null> {
  if (job.memberId === null) {
    const channel = teamsChannelOf(ctx, workspace);
    return channel && { target: channel, link: null };
  }
  if (!member?.teamsUserId) return null;
  const link = await mintDecisionLink(ctx, { hold, memberId: member.id, channel: 'teams' });
  return { target: { userId: member.teamsUserId }, link };
}
