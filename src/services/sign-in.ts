/**
 * Signing in to the app: a one-time link by e-mail (or from `approvals users invite`) opens a
 * session. Sessions and links are random secrets of which only the SHA-256 is stored.
 */
import { invitedMail, signInMail } from '../channels/messages.ts';
import { base64url, randomBytes, randomId } from '../domain/ids.ts';
import {
  findMember,
  findMemberByEmail,
  findMemberById,
  findMembershipsByEmail,
  hasActed,
  markActed,
  type Member,
} from '../store/members.ts';
import { insertNotification } from '../store/notifications.ts';
import {
  deleteSession,
  findLoginToken,
  findSession,
  insertLoginToken,
  insertSession,
  useLoginToken,
} from '../store/sessions.ts';
import { findOidcClient } from '../store/oidc-clients.ts';
import { findWorkspace, type Workspace } from '../store/workspaces.ts';
import type { Sql } from '../store/db.ts';
import type { ServiceContext } from './context.ts';
import { ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';

export const MAGIC_LINK_MINUTES = 15;
export const INVITE_DAYS = 7;
export const SESSION_DAYS = 7;

const secret = () => base64url(randomBytes(32));

/** How a session was opened: its evidence says so. */
export type SignInMethod = 'sign_in_link' | 'passkey' | 'oidc' | 'setup';

/** A sign-in the workspace does not allow; the message says what to do instead. */
export class SignInRefused extends Error {}

export interface AppSession {
  member: Member;
  workspace: Workspace;
  csrfToken: string;
}

/**
 * Who asked for a sign-in link and how it reached the member, recorded with every link made: the member
 * on the sign-in form (by e-mail), the operator on the server (`approvals users invite`, printed), or an
 * admin in the app (shown for a first invitation, otherwise e-mailed to the member).
 */
export type LinkRequest =
  | { by: 'member'; delivery: 'email' }
  | { by: 'operator'; delivery: 'printed' }
  | { by: Member; delivery: 'shown' | 'email' };

/** A one-time link and its evidence entry, inside the caller's transaction. */
async function mintLoginLink(
  tx: Sql,
  ctx: ServiceContext,
  member: Member,
  validMs: number,
  request: LinkRequest,
): Promise<string> {
  const token = secret();
  const now = ctx.now();
  const chain = await openChain(tx, ctx, member.workspaceId);
  await insertLoginToken(tx, {
    tokenHash: sha256Hex(token),
    memberId: member.id,
    createdAt: now,
    expiresAt: now + validMs,
  });
  await chain.append('member.sign_in_link', {
    member: { id: member.id, email: member.email },
    requested_by:
      typeof request.by === 'string' ? request.by : { id: request.by.id, email: request.by.email },
    delivery: request.delivery,
    expires_at: new Date(now + validMs).toISOString(),
  });
  return `${ctx.publicUrl}/app/login/${token}`;
}

/**
 * Queues a sign-in mail when the address belongs to a member (of any workspace). The app answers
 * before this runs, so its answer cannot tell whether the address is known; the notification worker
 * sends the mail, with retries, and makes the links only then: the queue holds no link.
 */
export async function queueSignInMail(ctx: ServiceContext, email: string): Promise<void> {
  const [member] = await findMembershipsByEmail(ctx.db, email.trim());
  if (!member) return;
  await insertNotification(ctx.db, {
    id: randomId('ntf_', 16),
    workspaceId: member.workspaceId,
    holdId: null,
    memberId: member.id,
    channel: 'email',
    kind: 'sign_in',
    replyCode: null,
    at: ctx.now(),
  });
}

/**
 * The notification worker's part: one mail with a fresh link for each workspace the member's address
 * belongs to. Skipped when the member was removed meanwhile or e-mail is no longer configured.
 */
export async function mailSignInLinks(
  ctx: ServiceContext,
  memberId: string | null,
): Promise<'sent' | 'skipped'> {
  const member = memberId ? await findMemberById(ctx.db, memberId) : undefined;
  const memberships = [];
  // No link where it would be refused: a workspace that requires its identity provider, but for admins.
  for (const membership of member ? await findMembershipsByEmail(ctx.db, member.email) : [])
    if (membership.role === 'admin' || !(await findOidcClient(ctx.db, membership.workspaceId))?.required)
      memberships.push(membership);
  if (!ctx.mailer || memberships.length === 0) return 'skipped';
  const links = [];
  for (const membership of memberships) {
    const url = await ctx.db.transaction((tx) =>
      mintLoginLink(tx, ctx, membership, MAGIC_LINK_MINUTES * 60_000, { by: 'member', delivery: 'email' }),
    );
    links.push({ workspace: membership.workspaceName, url });
  }
  await ctx.mailer.send({ to: memberships[0]!.email, ...signInMail(links, MAGIC_LINK_MINUTES) });
  return 'sent';
}

/** `approvals users invite`: a one-time sign-in link for a member, valid for a week, for the operator to print. */
export async function inviteLink(
  ctx: ServiceContext,
  workspace: Workspace,
  email: string,
): Promise<{ url: string }> {
  const member = await findMemberByEmail(ctx.db, workspace.id, email);
  // Named for the operator who typed it (the CLI); the app answers with a page of its own.
  if (!member)
    throw new ServiceError(
      'not_found',
      `member ${email} not found in workspace ${workspace.slug}: declare members with apply, or in the app`,
    );
  const url = await ctx.db.transaction((tx) =>
    mintLoginLink(tx, ctx, member, INVITE_DAYS * 86_400_000, { by: 'operator', delivery: 'printed' }),
  );
  return { url };
}

/**
 * Members → Invite in the app. A member who has never acted (signed in, or decided through any channel)
 * gets a first invitation the admin is shown (to pass on); a member who has acted gets the link by their
 * own e-mail only, so that an admin cannot sign in as them. Refused when e-mail is not set up: then only the operator on the server can
 * make a link (`approvals users invite`).
 */
export async function inviteFromApp(
  ctx: ServiceContext,
  session: AppSession,
  email: string,
): Promise<{ delivery: 'shown'; url: string } | { delivery: 'email' }> {
  const member = await findMemberByEmail(ctx.db, session.workspace.id, email);
  if (!member) throw new ServiceError('not_found', 'No such member in this workspace.');
  const mailer = ctx.mailer;
  const made = await ctx.db.transaction(async (tx) => {
    const admin = session.member;
    // Not only a session: a member who decided through a decision link, Slack, Teams or SMS has used a
    // credential of theirs too, and a shown link would let the admin act as them (`markActed`).
    if (!(await hasActed(tx, member))) {
      const url = await mintLoginLink(tx, ctx, member, INVITE_DAYS * 86_400_000, {
        by: admin,
        delivery: 'shown',
      });
      return { delivery: 'shown' as const, url };
    }
    if (!mailer)
      throw new ServiceError(
        'conflict',
        `${member.email} has used their account before, so a new sign-in link goes only to their own e-mail, and e-mail is not set up on this service. They can ask the operator, who can run approvals users invite on the server.`,
      );
    const url = await mintLoginLink(tx, ctx, member, INVITE_DAYS * 86_400_000, {
      by: admin,
      delivery: 'email',
    });
    return { delivery: 'email' as const, url };
  });
  if (made.delivery === 'shown') return made;
  await mailer!.send({
    to: member.email,
    ...invitedMail(
      { workspace: session.workspace.name, url: made.url },
      `${session.member.name} (${session.member.email})`,
      INVITE_DAYS,
    ),
  });
  return { delivery: 'email' };
}

/** Whether a sign-in link can still be used (GET shows a button; only POST uses it up). */
export async function signInLinkUsable(ctx: ServiceContext, token: string): Promise<boolean> {
  const row = await findLoginToken(ctx.db, sha256Hex(token));
  return !!row && row.usedAt === null && row.expiresAt > ctx.now();
}

/** Uses the link once and opens a new session (a new id every time: no session fixation). */
export async function signIn(ctx: ServiceContext, token: string): Promise<{ sessionId: string } | null> {
  return ctx.db.transaction(async (tx) => {
    const memberId = await useLoginToken(tx, sha256Hex(token), ctx.now());
    const member = memberId ? await findMemberById(tx, memberId) : undefined;
    return member ? { sessionId: await startSession(tx, ctx, member, 'sign_in_link') } : null;
  });
}

/**
 * A new session for a member, evidenced, inside the caller's transaction. Where the workspace requires
 * its identity provider, a sign-in link or a passkey opens one for an admin only (break-glass, said so
 * in the evidence); refused for the others (`SignInRefused`, the transaction rolls back).
 */
export async function startSession(
  tx: Sql,
  ctx: ServiceContext,
  member: Member,
  method: SignInMethod,
): Promise<string> {
  // Under the chain's lock, which a change of the sign-in settings or of the members takes too: a
  // sign-in either precedes such a change (which then ends its session) or sees it.
  const chain = await openChain(tx, ctx, member.workspaceId);
  const oidc = method === 'oidc' ? undefined : await findOidcClient(tx, member.workspaceId);
  const breakGlass = !!oidc?.required;
  if (breakGlass && (await findMemberById(tx, member.id))?.role !== 'admin')
    throw new SignInRefused(
      `This workspace signs in with ${oidc.displayName}: use “Sign in with ${oidc.displayName}” on the sign-in page.`,
    );
  const sessionId = secret();
  const now = ctx.now();
  await insertSession(tx, {
    idHash: sha256Hex(sessionId),
    memberId: member.id,
    workspaceId: member.workspaceId,
    csrfToken: secret(),
    createdAt: now,
    expiresAt: now + SESSION_DAYS * 86_400_000,
  });
  await markActed(tx, member, now);
  await chain.append('member.signed_in', {
    member: { id: member.id, email: member.email },
    method,
    ...(breakGlass ? { break_glass: true } : {}),
  });
  return sessionId;
}

/** The session behind a cookie value; none when unknown, expired, or the member was removed. */
export async function sessionFor(
  ctx: ServiceContext,
  sessionId: string | undefined,
): Promise<AppSession | null> {
  if (!sessionId || sessionId.length > 100) return null;
  const row = await findSession(ctx.db, sha256Hex(sessionId), ctx.now());
  if (!row) return null;
  const [member, workspace] = await Promise.all([
    findMember(ctx.db, row.workspaceId, row.memberId),
    findWorkspace(ctx.db, row.workspaceId),
  ]);
  return member && workspace ? { member, workspace, csrfToken: row.csrfToken } : null;
}

export async function signOut(ctx: ServiceContext, sessionId: string): Promise<void> {
  await deleteSession(ctx.db, sha256Hex(sessionId));
}
