/**
 * API keys (`/app/admin/keys`): the workspace's keys, a new key shown exactly once, revoking a key
 * (`/app/admin/keys/<id>/revoke`) or a connected OAuth client (`/app/admin/keys/grants/<id>/revoke`)
 * with a confirmation step.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createApiKey, listWorkspaceApiKeys, revokeWorkspaceApiKey } from '../../../services/api-keys.ts';
import { ServiceError } from '../../../services/errors.ts';
import { oauthGrantsOf, revokeOAuthGrant } from '../../../services/oauth.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import type { FieldErrors } from '../../forms/form.ts';
import { blankKey, keyIssueErrors, type NewKeyValues, parseNewKeyForm } from '../../forms/keys.ts';
import { type Html, html } from '../../html.ts';
import { field, type Form, type PageDeps, sendPage } from '../../respond.ts';
import { grantTable, keyPath, keyTable, newKeyCard, newKeyForm } from '../../views/keys.ts';
import { ADMIN, adminPage } from './shared.ts';
import { confirmCard } from '../../views/form-fields.ts';

const NOTICES: Record<string, string> = {
  revoked: 'The key is revoked. Calls with it are refused from now on.',
  'grant-revoked': 'The client’s access is revoked. Its tokens are refused from now on.',
};

const KEY_ID = /^key_[A-Za-z0-9_-]{1,40}$/;
const GRANT_ID = /^[A-Za-z0-9_-]{1,100}$/;

type Ctx = PageDeps['ctx'];
type IdRequest = FastifyRequest<{ Params: { id: string }; Body: Form }>;

async function keysPage(
  ctx: Ctx,
  session: AppSession,
  options: { notice?: string | null; before?: Html | null; values?: NewKeyValues; errors?: FieldErrors },
) {
  const keys = await listWorkspaceApiKeys(ctx, session.workspace);
  const grants = await oauthGrantsOf(ctx, session.workspace.id);
  const body = html`<h1>API keys</h1>
    ${options.before ?? null}
    <p class="muted">
      Agents send a key as <code>Authorization: Bearer …</code>. Only a hash of each key is stored: a key is
      shown once, when it is made.
    </p>
    ${keyTable(keys, session)} ${newKeyForm(session, options.values ?? blankKey, options.errors ?? {})}
    ${grantTable(grants, session)}`;
  return adminPage(ctx, session, { title: 'API keys', active: 'keys', notice: options.notice }, body);
}

async function createKey(ctx: Ctx, request: FastifyRequest<{ Body: Form }>, reply: FastifyReply) {
  const session = request.appSession!;
  const { values, result } = parseNewKeyForm(request.body);
  if (!result.ok)
    return sendPage(reply, await keysPage(ctx, session, { values, errors: result.errors }), 422);
  const key = result.value;
  let created;
  try {
    created = await createApiKey(ctx, {
      workspace: session.workspace,
      env: key.env,
      scope: key.scope,
      name: key.name || undefined,
      agent: key.agent || undefined,
      owner: key.owner || undefined,
    });
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    const errors = keyIssueErrors(error.issues, error.message);
    return sendPage(reply, await keysPage(ctx, session, { values, errors }), 422);
  }
  // The answer to the POST itself shows the key: no redirect, nothing stored to show it again.
  return sendPage(reply, await keysPage(ctx, session, { before: newKeyCard(created) }));
}

const notFound = async (ctx: Ctx, session: AppSession, reply: FastifyReply, message: string) =>
  sendPage(
    reply,
    await keysPage(ctx, session, { before: html`<p class="error" role="alert">${message}</p>` }),
    404,
  );

async function revokeKey(ctx: Ctx, request: IdRequest, reply: FastifyReply) {
  const session = request.appSession!;
  const id = request.params.id;
  const keys = KEY_ID.test(id) ? await listWorkspaceApiKeys(ctx, session.workspace) : [];
  const key = keys.find((k) => k.id === id);
  if (!key) return notFound(ctx, session, reply, 'No such key in this workspace.');
  if (key.revokedAt !== null) return redirectWithNotice(reply, '/app/admin/keys', 'revoked');
  if (field(request.body, 'confirm') !== 'yes') {
    const body = confirmCard(session, {
      title: 'Revoke this key?',
      message: html`Key <code>${key.id}</code>${key.name ? html` (“${key.name}”)` : null}, ${key.env}. Every
        call with it is refused at once. This cannot be undone.`,
      action: `${keyPath(key.id)}/revoke`,
      fields: {},
      button: 'Revoke key',
      back: '/app/admin/keys',
    });
    return sendPage(reply, await adminPage(ctx, session, { title: 'Revoke key', active: 'keys' }, body));
  }
  await revokeWorkspaceApiKey(ctx, session.workspace, key.id);
  return redirectWithNotice(reply, '/app/admin/keys', 'revoked');
}

async function revokeGrant(ctx: Ctx, request: IdRequest, reply: FastifyReply) {
  const session = request.appSession!;
  const id = request.params.id;
  const grants = GRANT_ID.test(id) ? await oauthGrantsOf(ctx, session.workspace.id) : [];
  const grant = grants.find((g) => g.id === id);
  if (!grant) return notFound(ctx, session, reply, 'No such connected client in this workspace.');
  if (field(request.body, 'confirm') !== 'yes') {
    const body = confirmCard(session, {
      title: 'Revoke this client’s access?',
      message: html`${grant.clientName}, allowed by ${grant.memberName} for the MCP server
      ${grant.serverName}. Its tokens are refused at once; to use it again, it must be allowed again.`,
      action: `/app/admin/keys/grants/${encodeURIComponent(grant.id)}/revoke`,
      fields: {},
      button: 'Revoke access',
      back: '/app/admin/keys',
    });
    return sendPage(reply, await adminPage(ctx, session, { title: 'Revoke access', active: 'keys' }, body));
  }
  await revokeOAuthGrant(ctx, session.workspace.id, grant.id, { member: session.member.email });
  return redirectWithNotice(reply, '/app/admin/keys', 'grant-revoked');
}

export function keyPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/admin/keys', ADMIN, async (request, reply) => {
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    return sendPage(reply, await keysPage(ctx, request.appSession!, { notice }));
  });
  app.post<{ Body: Form }>('/app/admin/keys', ADMIN, (request, reply) => createKey(ctx, request, reply));
  app.post<{ Params: { id: string }; Body: Form }>('/app/admin/keys/:id/revoke', ADMIN, (request, reply) =>
    revokeKey(ctx, request, reply),
  );
  app.post<{ Params: { id: string }; Body: Form }>(
    '/app/admin/keys/grants/:id/revoke',
    ADMIN,
    (request, reply) => revokeGrant(ctx, request, reply),
  );
}
