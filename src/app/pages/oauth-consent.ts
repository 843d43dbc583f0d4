/**
 * The consent step of OAuth for MCP clients (oauth/server.ts): a signed-in member sees which client asks
 * for which MCP server of which workspace, on whose behalf, and allows or refuses. Only the roles the
 * workspace lets grant may allow; the grant is recorded, with its evidence, before the client gets a code.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { OIDC_SCOPES } from '../../oauth/server.ts';
import {
  clientNameOf,
  mayGrantOAuth,
  MCP_SCOPE,
  recordOAuthGrant,
  resolveMcpResource,
} from '../../services/oauth.ts';
import type { AppSession } from '../../services/sign-in.ts';
import type { Workspace } from '../../store/workspaces.ts';
import { randomId } from '../../domain/ids.ts';
import { ServiceError } from '../../services/errors.ts';
import { APP_CSP, layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import { consentView } from '../views/oauth-consent.ts';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/** A redirect URI's origin, or its scheme for an app's own (`cursor:`): a CSP source and a text to show. */
const returnTarget = (redirect: URL) =>
  // An IPv6 literal (`http://[::1]:8080`) is no CSP source: its scheme is, for a native app's loopback.
  redirect.origin === 'null' || redirect.hostname.startsWith('[') ? redirect.protocol : redirect.origin;

type Asked = NonNullable<Awaited<ReturnType<typeof requestOf>>>;

/** The request being decided, or a page that says why there is none to decide. */
async function requestOf({ ctx, oauth }: PageDeps, request: FastifyRequest, reply: FastifyReply) {
  const session = request.appSession!;
  const provider = oauth.provider();
  let interaction: Interaction;
  try {
    interaction = await provider.interactionDetails(request.raw, reply.raw);
  } catch {
    problemPage(
      reply,
      400,
      'Request expired',
      'This authorization request has expired or was opened in another browser. Start again from your client.',
      session,
    );
    return null;
  }
  const { params } = interaction;
  const client = await provider.Client.find(String(params.client_id));
  const resource =
    typeof params.resource === 'string' ? await resolveMcpResource(ctx, params.resource) : null;
  if (!client || !resource) {
    problemPage(reply, 400, 'Unknown request', 'This request names no MCP server of this service.', session);
    return null;
  }
  return {
    session,
    provider,
    interaction,
    resourceUrl: params.resource as string,
    ...resource,
    client: { id: client.clientId, name: clientNameOf(client) },
    // Where the decision's answer sends the browser: the client's origin, or its app's scheme.
    returnsTo: returnTarget(new URL(String(params.redirect_uri))),
  };
}

/** Why this member cannot allow it, if they cannot. */
function refusal(session: AppSession, workspace: Workspace): string | null {
  if (session.workspace.id !== workspace.id)
    return `This MCP server belongs to the workspace ${workspace.name}, and you are signed in to ${session.workspace.name}. Sign out, and sign in with your membership of ${workspace.name}.`;
  if (!mayGrantOAuth(session.workspace, session.member))
    return `Only ${workspace.oauthGrantRole === 'approver' ? 'admins and approvers' : 'admins'} of ${workspace.name} can allow a client. Ask one of them to connect it.`;
  return null;
}

/** The library's grant for what was asked: the MCP server's scope, and the OIDC scopes asked for. */
async function saveGrant(asked: Asked, grantId: string) {
  const { provider, interaction, session, client } = asked;
  const grant = new provider.Grant({ accountId: session.member.id, clientId: client.id });
  // The id ours was recorded under: the library keeps one it is given (it makes one only if none).
  Object.assign(grant, { jti: grantId });
  grant.addResourceScope(asked.resourceUrl, MCP_SCOPE);
  const asks = String(interaction.params.scope ?? '').split(' ');
  const oidc = OIDC_SCOPES.filter((scope) => asks.includes(scope));
  // The MCP scope is also one of the library's own: granted on both lists, as it may be asked on either.
  grant.addOIDCScope([MCP_SCOPE, ...oidc].join(' '));
  await grant.save();
}

export function oauthConsentPages(app: FastifyInstance, deps: PageDeps) {
  const { ctx } = deps;
  app.get<{ Params: { uid: string } }>('/app/oauth/:uid', async (request, reply) => {
    const asked = await requestOf(deps, request, reply);
    if (!asked) return reply;
    const { session, client, server, workspace } = asked;
    const refused = refusal(session, workspace);
    const body = consentView({
      session,
      client,
      server,
      workspace,
      resourceUrl: asked.resourceUrl,
      returnsTo: asked.returnsTo,
      uid: asked.interaction.uid,
      refused,
    });
    // The decision's answer redirects to the client (its redirect URI, registered and checked by the
    // library): the form may lead there, and nowhere else.
    const csp = APP_CSP.replace("form-action 'self'", `form-action 'self' ${asked.returnsTo}`);
    return sendPage(
      reply,
      layout({ title: `Allow ${client.name}?`, session }, body),
      refused ? 403 : 200,
      csp,
    );
  });

  app.post<{ Params: { uid: string }; Body: Form }>('/app/oauth/:uid', async (request, reply) => {
    const asked = await requestOf(deps, request, reply);
    if (!asked) return reply;
    const { session, provider, interaction, client, server, workspace } = asked;
    // Sent twice (a double click, the back button, Allow then Refuse): the first decision stands.
    const decidedAlready = () =>
      problemPage(reply, 409, 'Already decided', 'This request was decided already.', session);
    if (interaction.result) return decidedAlready();
    if (field(request.body, 'verdict') !== 'allow') {
      reply.hijack();
      await provider.interactionFinished(request.raw, reply.raw, {
        error: 'access_denied',
        error_description: 'the member refused the request',
      });
      return reply;
    }
    const refused = refusal(session, workspace);
    if (refused) return problemPage(reply, 403, 'Not allowed', refused, session);

    // Ours first, once per request (two at once: one wins) and checked again under the workspace's
    // lock; then the library's grant, under the same id.
    const grantId = randomId('grant_', 24);
    try {
      await recordOAuthGrant(ctx, {
        grantId,
        interactionUid: interaction.uid,
        workspace,
        server,
        member: session.member,
        client,
      });
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'conflict') return decidedAlready();
      if (error instanceof ServiceError)
        return problemPage(reply, 403, 'Not allowed', error.message, session);
      throw error;
    }
    await saveGrant(asked, grantId);
    const returnTo = await provider.interactionResult(
      request.raw,
      reply.raw,
      { login: { accountId: session.member.id }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
    return reply.redirect(returnTo, 303);
  });
}
