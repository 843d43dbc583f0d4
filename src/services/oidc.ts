/**
 * Sign-in with the workspace's identity provider (OpenID Connect, authorization code with PKCE) through
 * `openid-client`, which checks the issuer, the audience, `state` and `nonce`. What the browser carries
 * between the two legs (the workspace, state, nonce and PKCE verifier) is sealed in a cookie of its own,
 * so a callback only finishes the sign-in its browser started. The member is found by the provider's
 * verified e-mail; `roles` maps a claim's values to a role; unknown addresses join only `just_in_time`.
 */
import {
  allowInsecureRequests,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  ClientSecretBasic,
  type Configuration,
  customFetch,
  discovery,
  fetchUserInfo,
  None,
  randomNonce,
  randomPKCECodeVerifier,
  randomState,
} from 'openid-client';
import { newMemberId } from '../domain/ids.ts';
import { type HttpClient, httpClient } from '../net/http-client.ts';
import type { Sql } from '../store/db.ts';
import { findMemberByEmail, listMembers, type Member, type Role, upsertMember } from '../store/members.ts';
import { findOidcClient, type OidcClient, wasRemovedMember } from '../store/oidc-clients.ts';
import { findWorkspace, findWorkspaceBySlug, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { openChain } from './evidence.ts';
import { SignInRefused, startSession } from './sign-in.ts';
import { versioned } from './versioned-change.ts';

/** How long the provider may take to send the browser back. */
export const OIDC_PENDING_MINUTES = 10;

export const callbackUrl = (ctx: ServiceContext) => `${ctx.publicUrl}/app/sso/callback`;

/** The provider is reached as webhooks are: no internal address unless ALLOW_PRIVATE_TARGETS. */
const clients = new Map<boolean, HttpClient>();
function httpFor(ctx: ServiceContext): HttpClient {
  let client = clients.get(ctx.allowPrivateTargets);
  if (!client)
    clients.set(ctx.allowPrivateTargets, (client = httpClient({ allowPrivate: ctx.allowPrivateTargets })));
  return client;
}

/** The provider's metadata, read fresh at each sign-in (a changed key or endpoint is seen at once). */
async function discover(ctx: ServiceContext, client: OidcClient): Promise<Configuration> {
  const issuer = new URL(client.issuer);
  const secret = client.clientSecretSealed && ctx.sealer.open(client.clientSecretSealed);
  const auth = secret ? ClientSecretBasic(secret) : None();
  return discovery(issuer, client.clientId, undefined, auth, {
    // http only for an issuer on this machine (the schema's rule): a development or test provider.
    execute: issuer.protocol === 'http:' ? [allowInsecureRequests] : [],
    [customFetch]: (url, options) => httpFor(ctx).fetch(url, options as RequestInit),
    timeout: 10,
  });
}

/** A workspace that signs in with an identity provider: its slug and the provider's name. */
export async function oidcSignInOf(ctx: ServiceContext, slug: string) {
  const workspace = await findWorkspaceBySlug(ctx.db, slug);
  const client = workspace && (await findOidcClient(ctx.db, workspace.id));
  return workspace && client ? { workspace, name: client.displayName } : null;
}

interface Pending {
  workspaceId: string;
  state: string;
  nonce: string;
  verifier: string;
  next: string | null;
  expiresAt: number;
}

/** Where to send the browser, and the sealed value its cookie keeps; null when the workspace has no provider. */
export async function startOidcSignIn(ctx: ServiceContext, slug: string, next: string | null) {
  const found = await oidcSignInOf(ctx, slug);
  const client = found && (await findOidcClient(ctx.db, found.workspace.id));
  if (!found || !client) return null;
  const config = await discover(ctx, client).catch((error: unknown) => {
    throw new SignInRefused(`${client.displayName} cannot be used now: ${failureOf(error)}.`);
  });
  const pending: Pending = {
    workspaceId: found.workspace.id,
    state: randomState(),
    nonce: randomNonce(),
    verifier: randomPKCECodeVerifier(),
    next,
    expiresAt: ctx.now() + OIDC_PENDING_MINUTES * 60_000,
  };
  const url = buildAuthorizationUrl(config, {
    redirect_uri: callbackUrl(ctx),
    scope: client.rolesClaim ? `openid email profile ${client.rolesClaim}` : 'openid email profile',
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: await calculatePKCECodeChallenge(pending.verifier),
    code_challenge_method: 'S256',
  });
  return { url: url.href, pending: ctx.sealer.seal(JSON.stringify(pending)) };
}

function openPending(ctx: ServiceContext, sealed: string | undefined): Pending {
  let pending: Pending | undefined;
  try {
    pending = sealed ? (JSON.parse(ctx.sealer.open(sealed)) as Pending) : undefined;
  } catch {
    pending = undefined;
  }
  if (!pending || pending.expiresAt <= ctx.now())
    throw new SignInRefused('This sign-in was not started here or took too long. Start it again.');
  return pending;
}

/**
 * The callback: the code exchanged (once: the provider refuses a replayed one), the ID token checked,
 * and a session opened for the member of the provider's verified e-mail.
 */
export async function finishOidcSignIn(ctx: ServiceContext, sealed: string | undefined, query: string) {
  const pending = openPending(ctx, sealed);
  const currentUrl = new URL(callbackUrl(ctx) + query);
  const client = await findOidcClient(ctx.db, pending.workspaceId);
  if (!client) throw new SignInRefused('This workspace no longer signs in with an identity provider.');
  const claims = await verifiedClaims(ctx, client, pending, currentUrl);
  const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
  if (!email || claims.email_verified !== true)
    throw new SignInRefused(`${client.displayName} did not vouch for your e-mail address (email_verified).`);
  const sessionId = await ctx.db.transaction(async (tx) => {
    const workspace = (await findWorkspace(tx, client.workspaceId))!;
    const member = await memberFor(tx, ctx, workspace, client, email, claims);
    return startSession(tx, ctx, member, 'oidc');
  });
  return { sessionId, next: pending.next };
}

async function verifiedClaims(ctx: ServiceContext, client: OidcClient, pending: Pending, currentUrl: URL) {
  try {
    const config = await discover(ctx, client);
    const tokens = await authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: pending.verifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const idToken = tokens.claims()!;
    const wanted = ['email', 'email_verified', ...(client.rolesClaim ? [client.rolesClaim] : [])];
    if (wanted.every((claim) => claim in idToken)) return idToken as Record<string, unknown>;
    // Providers that keep claims out of the ID token give them at the userinfo endpoint (same subject).
    const userinfo = await fetchUserInfo(config, tokens.access_token, idToken.sub);
    return { ...userinfo, ...idToken } as Record<string, unknown>;
  } catch (error) {
    const reason = failureOf(error);
    throw new SignInRefused(`${client.displayName} did not sign you in: ${reason}. Start again.`);
  }
}

/** What failed, in the library's words: its inner error names the check (the `nonce` claim, the issuer). */
function failureOf(error: unknown): string {
  if (!(error instanceof Error)) return 'an invalid answer';
  return error.cause instanceof Error ? error.cause.message : error.message;
}

const RANK: Record<Role, number> = { viewer: 0, approver: 1, admin: 2 };

/** The highest role `roles` maps the claim's values to; null when none maps. */
export function mappedRole(
  client: Pick<OidcClient, 'rolesClaim' | 'roles'>,
  claims: Record<string, unknown>,
) {
  const value = client.rolesClaim ? claims[client.rolesClaim] : undefined;
  const values = (Array.isArray(value) ? value : [value]).filter((v) => typeof v === 'string');
  // Own keys only: a claim value such as `constructor` must not find what every object inherits.
  const roles = values.filter((v) => Object.hasOwn(client.roles, v)).map((v) => client.roles[v]!);
  return roles.sort((a, b) => RANK[b] - RANK[a])[0] ?? null;
}

/**
 * The member the verified e-mail is: the role the provider's claim maps to replaces theirs; an unknown
 * address joins only with `just_in_time` (a removed member never comes back this way). A change of
 * membership is a configuration change, versioned and evidenced as `config.applied`.
 */
async function memberFor(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  client: OidcClient,
  email: string,
  claims: Record<string, unknown>,
): Promise<Member> {
  const member = await findMemberByEmail(tx, workspace.id, email);
  const role = mappedRole(client, claims);
  if (member && (!role || role === member.role)) return member;
  // The provider never demotes the workspace's last admin: nobody could sign in to set it right.
  if (member?.role === 'admin' && (await isLastAdmin(tx, member))) return member;
  if (!member && (!client.justInTime || (await wasRemovedMember(tx, workspace.id, email))))
    throw new SignInRefused(`${email} is not a member of this workspace. Ask one of its admins.`);
  const name =
    typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : email;
  const changed: Member = member
    ? { ...member, role: role! }
    : {
        ...{ id: newMemberId(), workspaceId: workspace.id, email, name, role: role ?? 'viewer' },
        ...{ phone: null, slackUserId: null, teamsUserId: null, channels: ['email'], timeZone: null },
        ...{ quietHours: null, digestMinutes: null, agents: [], delegation: null, createdAt: ctx.now() },
      };
  const chain = await openChain(tx, ctx, workspace.id);
  await versioned(tx, ctx, workspace, `sign-in with ${client.displayName}`, chain, async () => {
    await upsertMember(tx, changed, ctx.now());
    const what = member
      ? { role: { from: member.role, to: changed.role } }
      : { joined: { role: changed.role } };
    return { changes: { sign_in: { member: email, issuer: client.issuer, ...what } } };
  });
  return (await findMemberByEmail(tx, workspace.id, email))!;
}

const isLastAdmin = async (tx: Sql, member: Member) =>
  !(await listMembers(tx, member.workspaceId)).some((m) => m.role === 'admin' && m.id !== member.id);

/** The admin page's check: the provider's metadata can be read and names the issuer configured. */
export async function testOidcConnection(ctx: ServiceContext, workspaceId: string) {
  const client = await findOidcClient(ctx.db, workspaceId);
  if (!client) return { ok: false as const, problem: 'No identity provider is set up.' };
  try {
    const config = await discover(ctx, client);
    return { ok: true as const, issuer: config.serverMetadata().issuer };
  } catch (error) {
    return { ok: false as const, problem: failureOf(error) };
  }
}
