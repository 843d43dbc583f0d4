/**
 * The members a file declares, applied (inside the caller's transaction): their rows, who delegates to
 * whom, and the delivery addresses that change, which only the member may point elsewhere once they
 * have acted (issue 37) and which are told to them once the change is stored.
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { addressesChangedMail } from '../channels/messages.ts';
import { newMemberId } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import {
  listAddressOwners,
  type Member,
  type MemberAddresses,
  removeMembersExcept,
  upsertMember,
} from '../store/members.ts';
import type { Workspace } from '../store/workspaces.ts';
import { findOidcClient } from '../store/oidc-clients.ts';
import { endSessionsOfNonAdmins } from '../store/sessions.ts';
import { configError, type ParsedConfig, type WorkspaceConfig } from './config-file.ts';
import type { ServiceContext } from './context.ts';
import type { FieldIssue } from './errors.ts';
import { emitDelegationEvents } from './webhooks.ts';

/**
 * Who makes a change: its name in the evidence, and the member it is when a member makes it in the app
 * (an admin page, their own Settings); none for `approvals apply` and the workspace API.
 */
export interface Actor {
  name: string;
  memberId?: string;
}

/** A delivery address of a member changed by a change: in its evidence entry, and told to the member. */
interface AddressChange {
  member: string;
  field: (typeof ADDRESS_FIELDS)[number][0];
  from: string | null;
  to: string | null;
}

/** A member's delivery addresses, as the file and the store name them. E-mail is the member's identity. */
const ADDRESS_FIELDS = [
  ['phone', 'phoneOf', 'phone number'],
  ['slack_user_id', 'slackOf', 'Slack user id'],
  ['teams_user_id', 'teamsOf', 'Teams user id'],
] as const;

type DeclaredMember = NonNullable<WorkspaceConfig['members']>[number];
const declared = {
  phoneOf: (m: DeclaredMember) => m.phone ?? null,
  slackOf: (m: DeclaredMember) => m.slack_user_id ?? null,
  // Kept in lower case: the same id in capitals is no change.
  teamsOf: (m: DeclaredMember) => m.teams_user_id?.toLowerCase() ?? null,
};
const storedAddress = {
  phoneOf: (m: MemberAddresses) => m.phone,
  slackOf: (m: MemberAddresses) => m.slackUserId,
  teamsOf: (m: MemberAddresses) => m.teamsUserId,
};

/**
 * The delivery addresses a file changes, and the changes refused (issue 37): a member's phone, Slack and
 * Teams user ids are where their decision links and reply codes go, and the Slack and Teams ids also say
 * who pressed a button. Once the member has acted (`markActed`), only they set them; anyone else (an
 * admin in the app, `approvals apply`, the workspace API) may clear one, which sends nothing anywhere,
 * but not point it elsewhere. A value given as stored is no change, so an exported file applies back.
 * A removed member declared again keeps their row, so they are compared with it too.
 */
async function addressChanges(
  tx: Sql,
  workspaceId: string,
  members: DeclaredMember[],
  actor: Actor,
  lineOf: ParsedConfig['lineOf'],
) {
  const owners = await listAddressOwners(tx, workspaceId);
  const changes: (AddressChange & { memberId: string | null })[] = [];
  const refused: FieldIssue[] = [];
  members.forEach((member, index) => {
    const email = member.email.toLowerCase();
    const owner = owners.get(email);
    for (const [field, key, label] of ADDRESS_FIELDS) {
      const from = owner ? storedAddress[key](owner) : null;
      const to = declared[key](member);
      if (from === to) continue;
      if (owner?.acted && to !== null && owner.id !== actor.memberId) {
        refused.push({
          field: `members.${index}.${field}`,
          message: `${member.name} has used their account, so only ${member.name} can change their ${label}, on their own Settings page (it is where their decision links and codes go); it may only be cleared here`,
          line: lineOf(['members', index, field]),
        });
        continue;
      }
      changes.push({ member: email, field, from, to, memberId: owner?.id ?? null });
    }
  });
  if (refused.length > 0) throw configError(refused);
  return changes;
}

/** The delivery addresses a change sets, with the member (when stored) whose they are. */
export type AddressChanges = Awaited<ReturnType<typeof addressChanges>>;

/**
 * Tells each member whose addresses someone else changed, by e-mail to the member's own address (best
 * effort, after the change is stored): an address they did not set shows at once. A member the change
 * adds is not written to (no mail has told them of the workspace yet); their addresses are in the
 * evidence like every other.
 */
export async function announceAddressChanges(
  ctx: ServiceContext,
  workspace: Workspace,
  actor: Actor,
  changes: AddressChanges,
) {
  if (!ctx.mailer) return;
  const byMember = new Map<string, typeof changes>();
  for (const change of changes) {
    if (change.memberId === null || change.memberId === actor.memberId) continue;
    byMember.set(change.member, [...(byMember.get(change.member) ?? []), change]);
  }
  for (const [email, own] of byMember) {
    await ctx.mailer
      .send({
        to: email,
        ...addressesChangedMail(
          workspace.name,
          actor.name,
          own.map(({ field, from, to }) => ({
            label: ADDRESS_FIELDS.find(([name]) => name === field)![2],
            from,
            to,
          })),
          `${ctx.publicUrl}/app/settings`,
        ),
      })
      .catch(() => undefined);
  }
}

/**
 * The file's members replace the stored ones; the evidence (`changes`) names who is declared and
 * removed, every delivery address changed and every delegation set, changed or ended.
 */
export async function applyMembers(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  members: DeclaredMember[],
  given: {
    storedMembers: Member[];
    actor: Actor;
    lineOf: ParsedConfig['lineOf'];
    /** Filled with the delivery addresses the change sets: announced once it is stored. */
    addresses: AddressChanges;
    changes: Record<string, unknown>;
    now: number;
  },
) {
  const { storedMembers, actor, lineOf, addresses, changes, now } = given;
  // Replaced, not added to: a transaction tried again starts over.
  addresses.splice(0, addresses.length, ...(await addressChanges(tx, workspace.id, members, actor, lineOf)));
  const existing = new Map(storedMembers.map((member) => [member.email, member]));
  // Ids first: a delegation may name a member declared further down.
  const idOf = new Map(
    members.map((m) => [m.email.toLowerCase(), existing.get(m.email.toLowerCase())?.id ?? newMemberId()]),
  );
  const delegations: Record<string, unknown>[] = [];
  for (const member of members) {
    const email = member.email.toLowerCase();
    const delegation = member.delegate
      ? {
          delegateId: idOf.get(member.delegate.to.toLowerCase())!,
          from: Date.parse(member.delegate.from),
          until: Date.parse(member.delegate.until),
        }
      : null;
    const before = existing.get(email)?.delegation ?? null;
    if (canonicalJson(before) !== canonicalJson(delegation)) {
      delegations.push({
        member: email,
        delegate: member.delegate ? member.delegate.to.toLowerCase() : null,
        from: delegation && new Date(delegation.from).toISOString(),
        until: delegation && new Date(delegation.until).toISOString(),
      });
    }
    await upsertMember(
      tx,
      {
        id: idOf.get(email)!,
        workspaceId: workspace.id,
        email,
        name: member.name,
        role: member.role,
        phone: member.phone ?? null,
        slackUserId: member.slack_user_id ?? null,
        teamsUserId: member.teams_user_id?.toLowerCase() ?? null,
        channels: member.channels ?? ['email'],
        timeZone: member.time_zone ?? null,
        quietHours: member.quiet_hours ?? null,
        digestMinutes: member.digest_minutes ?? null,
        agents: member.agents ?? [],
        delegation,
        createdAt: now,
      },
      now,
    );
  }
  await endBreakGlassOfDemoted(tx, workspace.id, members, existing);
  const kept = members.map((member) => member.email.toLowerCase());
  const removed = await removeMembersExcept(tx, workspace.id, kept, now);
  changes.members = { declared: kept, removed: removed.map((member) => member.email) };
  // Where each member's decision links and codes go, before and after: every change of one is named.
  if (addresses.length > 0)
    changes.addresses = addresses.map(({ member, field, from, to }) => ({ member, field, from, to }));
  // Who decides in whose place, and when: the evidence names each delegation set, changed or ended.
  if (delegations.length > 0) {
    changes.delegations = delegations;
    await emitDelegationEvents(tx, ctx, workspace.id, delegations);
  }
}

/**
 * Where the workspace requires its identity provider, an admin made approver or viewer keeps no session
 * or embed token a sign-in link (break-glass) may have opened: they sign in with the provider again.
 */
async function endBreakGlassOfDemoted(
  tx: Sql,
  workspaceId: string,
  members: readonly { email: string; role: string }[],
  existing: ReadonlyMap<string, { id: string; role: string }>,
) {
  const demoted = members.flatMap((member) => {
    const before = existing.get(member.email.toLowerCase());
    return before?.role === 'admin' && member.role !== 'admin' ? [before.id] : [];
  });
  if (demoted.length > 0 && (await findOidcClient(tx, workspaceId))?.required)
    await endSessionsOfNonAdmins(tx, workspaceId, demoted);
}
