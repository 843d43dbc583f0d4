/** The API keys page's views: the keys, the form that creates one, a new key shown once, the OAuth clients. */
import type { ApiKeySummary, createApiKey } from '../../services/api-keys.ts';
import type { OAuthGrantListed } from '../../services/oauth.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { copyable } from '../copyable.ts';
import type { FieldErrors } from '../forms/form.ts';
import type { NewKeyValues } from '../forms/keys.ts';
import { type Html, html, time, when } from '../html.ts';
import { checked, csrfField, fieldError, inputField } from './form-fields.ts';

/** A key's own URL (`/revoke` below it). */
export const keyPath = (id: string) => `/app/admin/keys/${encodeURIComponent(id)}`;

/** OAuth clients members allowed (MCP clients that connect without a key): who, to what, last use. */
export function grantTable(grants: OAuthGrantListed[], session: AppSession): Html {
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
                      <form
                        method="post"
                        action="/app/admin/keys/grants/${encodeURIComponent(grant.id)}/revoke"
                      >
                        ${csrfField(session)}
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

/** A bound key's agent identity and owner (who may not approve its holds), or that any agent may use it. */
function boundTo(key: ApiKeySummary): Html {
  if (key.agentId === null) return html`<span class="muted">any agent</span>`;
  const owner = key.ownerEmail ? `${key.ownerName} (${key.ownerEmail})` : null;
  return html`<code>${key.agentId}</code
    >${owner ? html`<br /><span class="muted">owned by</span> ${owner}` : null}`;
}

export function keyTable(keys: ApiKeySummary[], session: AppSession): Html {
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
                  html`<form method="post" action="${keyPath(key.id)}/revoke">
                    ${csrfField(session)}
                    <button type="submit" class="secondary">Revoke…</button>
                  </form>`,
              )}
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function newKeyForm(session: AppSession, values: NewKeyValues, errors: FieldErrors): Html {
  return html`<section class="card" aria-labelledby="new-key">
    <h2 id="new-key">Create a key</h2>
    <form method="post" action="/app/admin/keys" class="decide">
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
      ${inputField({
        id: 'key-name',
        name: 'name',
        label: 'Name (optional, up to 100 characters)',
        type: 'text',
        value: values.name,
        error: errors.name,
        extra: html`maxlength="100"`,
      })}
      <fieldset class="plain">
        <legend><strong>Bind to an agent</strong> (optional)</legend>
        <p class="muted">
          A bound key's holds carry this agent identity; a call naming another is refused. Its owner may not
          approve them: they are the owner's own requests.
        </p>
        ${inputField({
          id: 'key-agent',
          name: 'agent',
          label: 'Agent identity',
          type: 'text',
          value: values.agent,
          error: errors.agent,
          extra: html`maxlength="200"`,
        })}
        ${inputField({
          id: 'key-owner',
          name: 'owner',
          label: "Owner (a member's e-mail)",
          type: 'email',
          value: values.owner,
          error: errors.owner,
          extra: html`maxlength="254"`,
        })}
      </fieldset>
      <div class="buttons"><button type="submit">Create key</button></div>
    </form>
  </section>`;
}

/** A key just made: the answer to the POST shows it, once; nothing is stored to show it again. */
export const newKeyCard = (created: Awaited<ReturnType<typeof createApiKey>>) =>
  html`<section class="card" aria-labelledby="key-made">
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
    <p class="muted">Key id <code>${created.id}</code>. If the key is lost, revoke it and create another.</p>
  </section>`;
