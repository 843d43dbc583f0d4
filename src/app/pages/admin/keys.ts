/** API keys: the workspace's keys, a new key shown exactly once, revoking with a confirmation step. */
import type { FastifyInstance } from 'fastify';
import {
  type ApiKeySummary,
  createApiKey,
  listWorkspaceApiKeys,
  revokeWorkspaceApiKey,
} from '../../../services/api-keys.ts';
import { ServiceError } from '../../../services/errors.ts';
import { type OAuthGrantListed, oauthGrantsOf, revokeOAuthGrant } from '../../../services/oauth.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { copyable } from '../../copyable.ts';
import { type Html, html, time, when } from '../../html.ts';
import { field, type Form, type PageDeps, sendPage } from '../../respond.ts';
import { ADMIN, adminPage, checked, confirmCard, csrfField, describedBy, fieldError } from './shared.ts';

const KEY_ID = /^key_[A-Za-z0-9_-]{1,40}$/;

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

const NOTICES: Record<string, string> = {
  revoked: 'The key is revoked. Calls with it are refused from now on.',
  'grant-revoked': 'The client’s access is revoked. Its tokens are refused from now on.',
};

const GRANT_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** OAuth clients members allowed (MCP clients that connect without a key): who, to what, last use. */
function grantTable(grants: OAuthGrantListed[], session: AppSession): Html {
  return html`<section class="card" aria-labelledby="oauth-clients">
    <h2 id="oauth-clients">Connected clients</h2>
    <p class="muted">
      MCP clients that connected with OAuth (a hosted assistant's connector, a desktop app) instead of a key,
      each allowed by a member for one MCP server. Their calls go through the rules as the agent
      <code>oauth:&lt;member&gt;:&lt;client&gt;</code>.
    </p>
    ${
      grants.length === 0
        ? html`<p class="empty">No client connected yet.</p>`
        : html`<table class="responsive">
            <thead>
              <tr>
                <th>Client</th>
                <th>Allowed by</th>
                <th>MCP server</th>
                <th>Allowed</th>
                <th>Last used</th>
                <th><span class="muted">Action</span></th>
              </tr>
            </thead>
            <tbody>
              ${grants.map(
                (grant) =>
                  html`<tr>
                    <td>${grant.clientName}<br /><code class="muted">${grant.clientId}</code></td>
                    <td data-label="Allowed by">${grant.memberName} (${grant.memberEmail})</td>
                    <td data-label="MCP server">${grant.serverName} (<code>${grant.serverSlug}</code>)</td>
                    <td data-label="Allowed">${time(grant.createdAt)}</td>
                    <td data-label="Last used">
                      ${grant.lastUsedAt === null ? html`<span class="muted">never</span>` : time(grant.lastUsedAt)}
                    </td>
                    <td>
                      <form method="post" action="/app/admin/keys/grants/revoke">
                        ${csrfField(session)}
                        <input type="hidden" name="grant" value="${grant.id}" />
                        <button type="submit" class="secondary">Revoke…</button>
                      </form>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

interface CreateValues {
  env: string;
  scope: string;
  name: string;
  /** Binding: the agent identity its holds carry, and the member (e-mail) who owns that agent. */
  agent: string;
  owner: string;
}

/** A bound key's agent identity and owner (who may not approve its holds), or that any agent may use it. */
function boundTo(key: ApiKeySummary): Html {
  if (key.agentId === null) return html`<span class="muted">any agent</span>`;
  const owner = key.ownerEmail ? `${key.ownerName} (${key.ownerEmail})` : null;
  return html`<code>${key.agentId}</code
    >${owner ? html`<br /><span class="muted">owned by</span> ${owner}` : null}`;
}

function keyTable(keys: ApiKeySummary[], session: AppSession): Html {
  if (keys.length === 0) return html`<p class="empty card">No API keys yet.</p>`;
  return html`<table class="responsive">
    <thead>
      <tr>
        <th>Key id</th>
        <th>Name</th>
        <th>Environment</th>
        <th>Scope</th>
        <th>Bound to</th>
        <th>Created</th>
        <th>Status</th>
        <th><span class="muted">Action</span></th>
      </tr>
    </thead>
    <tbody>
      ${keys.map(
        (key) =>
          html`<tr>
            <td><code>${key.id}</code></td>
            <td data-label="Name">${key.name ?? html`<span class="muted">—</span>`}</td>
            <td data-label="Environment">${key.env}</td>
            <td data-label="Scope">${key.scope}</td>
            <td data-label="Bound to">${boundTo(key)}</td>
            <td data-label="Created">${time(key.createdAt)}</td>
            <td data-label="Status">
              ${
                key.revokedAt === null
                  ? html`<span class="status approved">active</span>`
                  : html`<span class="status rejected">revoked</span> ${time(key.revokedAt)}`
              }
            </td>
            <td>
              ${when(
                key.revokedAt === null,
                () =>
                  html`<form method="post" action="/app/admin/keys/revoke">
                    ${csrfField(session)}
                    <input type="hidden" name="id" value="${key.id}" />
                    <button type="submit" class="secondary">Revoke…</button>
                  </form>`,
              )}
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function createForm(session: AppSession, values: CreateValues, errors: Record<string, string>): Html {
  return html`<section class="card" aria-labelledby="new-key">
    <h2 id="new-key">Create a key</h2>
    <form method="post" action="/app/admin/keys/create" class="decide">
      ${csrfField(session)}
      <fieldset class="plain">
        <legend><strong>Environment</strong></legend>
        <div class="row">
          <label class="choice"
            ><input type="radio" name="env" value="live" ${checked(values.env !== 'test')} /> live
            (<code>svc_live_…</code>)</label
          >
          <label class="choice"
            ><input type="radio" name="env" value="test" ${checked(values.env === 'test')} /> test
            (<code>svc_test_…</code>)</label
          >
        </div>
      </fieldset>
      ${fieldError('key-env', errors.env)}
      <fieldset class="plain">
        <legend><strong>Scope</strong></legend>
        <div class="row">
          <label class="choice"
            ><input type="radio" name="scope" value="agent" ${checked(values.scope !== 'admin')} /> agent:
            holds and the evidence (the Core API)</label
          >
          <label class="choice"
            ><input type="radio" name="scope" value="admin" ${checked(values.scope === 'admin')} />
            <span
              >admin: also the workspace's configuration (<code>approvals apply</code> from CI), simulations
              and the hold list</span
            ></label
          >
        </div>
      </fieldset>
      ${fieldError('key-scope', errors.scope)}
      <label for="key-name">Name (optional, up to 100 characters)</label>
      <input
        id="key-name"
        name="name"
        type="text"
        maxlength="100"
        value="${values.name}"
        ${describedBy('key-name', errors.name)}
      />
      ${fieldError('key-name', errors.name)}
      <fieldset class="plain">
        <legend><strong>Bind to an agent</strong> (optional)</legend>
        <p class="muted">
          A bound key's holds carry this agent identity; a call naming another is refused. Its owner may not
          approve them: they are the owner's own requests.
        </p>
        <label for="key-agent">Agent identity</label>
        <input
          id="key-agent"
          name="agent"
          type="text"
          maxlength="200"
          value="${values.agent}"
          ${describedBy('key-agent', errors.agent)}
        />
        ${fieldError('key-agent', errors.agent)}
        <label for="key-owner">Owner (a member's e-mail)</label>
        <input
          id="key-owner"
          name="owner"
          type="email"
          maxlength="254"
          value="${values.owner}"
          ${describedBy('key-owner', errors.owner)}
        />
        ${fieldError('key-owner', errors.owner)}
      </fieldset>
      <div class="buttons"><button type="submit">Create key</button></div>
    </form>
  </section>`;
}

export function keyPages(app: FastifyInstance, { ctx }: PageDeps) {
  const listPage = async (
    session: AppSession,
    options: {
      notice?: string | null;
      before?: Html | null;
      values?: CreateValues;
      errors?: Record<string, string>;
    },
  ) => {
    const keys = await listWorkspaceApiKeys(ctx, session.workspace);
    const grants = await oauthGrantsOf(ctx, session.workspace.id);
    const body = html`<h1>API keys</h1>
      ${options.before ?? null}
      <p class="muted">
        Agents send a key as <code>Authorization: Bearer …</code>. Only a hash of each key is stored: a key is
        shown once, when it is made.
      </p>
      ${keyTable(keys, session)}
      ${createForm(
        session,
        options.values ?? { env: 'live', scope: 'agent', name: '', agent: '', owner: '' },
        options.errors ?? {},
      )}
      ${grantTable(grants, session)}`;
    return adminPage(ctx, session, { title: 'API keys', active: 'keys', notice: options.notice }, body);
  };

  app.get<{ Querystring: { notice?: string } }>('/app/admin/keys', ADMIN, async (request, reply) => {
    const notice = NOTICES[request.query.notice ?? ''] ?? null;
    return sendPage(reply, await listPage(request.appSession!, { notice }));
  });

  app.post<{ Body: Form }>('/app/admin/keys/create', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const values = {
      env: field(request.body, 'env'),
      scope: field(request.body, 'scope') || 'agent',
      name: field(request.body, 'name'),
      agent: field(request.body, 'agent').trim(),
      owner: field(request.body, 'owner').trim(),
    };
    const errors: Record<string, string> = {};
    if (values.env !== 'live' && values.env !== 'test') errors.env = 'Choose live or test.';
    if (values.scope !== 'agent' && values.scope !== 'admin') errors.scope = 'Choose agent or admin.';
    if (values.name.length > 100) errors.name = 'Use at most 100 characters.';
    if (Object.keys(errors).length > 0)
      return sendPage(reply, await listPage(session, { values, errors }), 422);
    let created;
    try {
      created = await createApiKey(ctx, {
        workspace: session.workspace,
        env: values.env as 'live' | 'test',
        scope: values.scope as 'agent' | 'admin',
        name: values.name || undefined,
        agent: values.agent || undefined,
        owner: values.owner || undefined,
      });
    } catch (error) {
      if (error instanceof ServiceError) {
        // Shown at the field it is about (name, agent or owner).
        const issue = error.issues[0];
        const at = issue && issue.field in values ? issue.field : 'name';
        const text = issue ? `${capitalized(issue.message)}.` : error.message;
        return sendPage(reply, await listPage(session, { values, errors: { [at]: text } }), 422);
      }
      throw error;
    }
    // The answer to the POST itself shows the key: no redirect, nothing stored to show it again.
    const shown = html`<section class="card" aria-labelledby="key-made">
      <h2 id="key-made">New ${created.env} key${created.name ? html` “${created.name}”` : null}</h2>
      <p><strong>Copy this key now. It will not be shown again</strong>: only its hash is stored.</p>
      ${when(
        created.scope === 'admin',
        () =>
          html`<p>
            An <strong>admin</strong> key: besides the Core API, it reads and applies this workspace's
            configuration. Give it to CI, not to agents.
          </p>`,
      )}
      ${when(
        created.agent !== null,
        () =>
          html`<p>
            Bound to the agent <code>${created.agent}</code>${
              created.owner ? html`, owned by ${created.owner}, who may not approve its holds` : null
            }.
          </p>`,
      )}
      ${copyable('new-key-value', created.key, 'the key')}
      <p class="muted">
        Key id <code>${created.id}</code>. If the key is lost, revoke it and create another.
      </p>
    </section>`;
    return sendPage(reply, await listPage(session, { before: shown }));
  });

  app.post<{ Body: Form }>('/app/admin/keys/revoke', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const id = field(request.body, 'id');
    const keys = KEY_ID.test(id) ? await listWorkspaceApiKeys(ctx, session.workspace) : [];
    const key = keys.find((k) => k.id === id);
    if (!key) {
      const before = html`<p class="error" role="alert">No such key in this workspace.</p>`;
      return sendPage(reply, await listPage(session, { before }), 404);
    }
    if (key.revokedAt !== null) return reply.redirect('/app/admin/keys?notice=revoked', 303);
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Revoke this key?',
        message: html`Key <code>${key.id}</code>${key.name ? html` (“${key.name}”)` : null}, ${key.env}. Every
          call with it is refused at once. This cannot be undone.`,
        action: '/app/admin/keys/revoke',
        fields: { id: key.id },
        button: 'Revoke key',
        back: '/app/admin/keys',
      });
      return sendPage(reply, await adminPage(ctx, session, { title: 'Revoke key', active: 'keys' }, body));
    }
    await revokeWorkspaceApiKey(ctx, session.workspace, key.id);
    return reply.redirect('/app/admin/keys?notice=revoked', 303);
  });

  app.post<{ Body: Form }>('/app/admin/keys/grants/revoke', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const id = field(request.body, 'grant');
    const grants = GRANT_ID.test(id) ? await oauthGrantsOf(ctx, session.workspace.id) : [];
    const grant = grants.find((g) => g.id === id);
    if (!grant) {
      const before = html`<p class="error" role="alert">No such connected client in this workspace.</p>`;
      return sendPage(reply, await listPage(session, { before }), 404);
    }
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Revoke this client’s access?',
        message: html`${grant.clientName}, allowed by ${grant.memberName} for the MCP server
        ${grant.serverName}. Its tokens are refused at once; to use it again, it must be allowed again.`,
        action: '/app/admin/keys/grants/revoke',
        fields: { grant: grant.id },
        button: 'Revoke access',
        back: '/app/admin/keys',
      });
      return sendPage(reply, await adminPage(ctx, session, { title: 'Revoke access', active: 'keys' }, body));
    }
    await revokeOAuthGrant(ctx, session.workspace.id, grant.id, { member: session.member.email });
    return reply.redirect('/app/admin/keys?notice=grant-revoked', 303);
  });
}
