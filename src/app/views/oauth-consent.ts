/** The OAuth consent page (`/app/oauth/<uid>`): which client asks for which MCP server, on whose behalf. */
import type { AppSession } from '../../services/sign-in.ts';
import type { Workspace } from '../../store/workspaces.ts';
import { type Html, html, when } from '../html.ts';

export interface Consent {
  session: AppSession;
  client: { id: string; name: string };
  server: { name: string };
  workspace: Workspace;
  resourceUrl: string;
  /** Where the decision's answer sends the browser: the client's origin, or its app's scheme. */
  returnsTo: string;
  uid: string;
  /** Why this member cannot allow it, if they cannot: only Refuse is offered then. */
  refused: string | null;
}

export function consentView({
  session,
  client,
  server,
  workspace,
  resourceUrl,
  returnsTo,
  uid,
  refused,
}: Consent): Html {
  return html`<div class="narrow card consent">
    <h1>Allow ${client.name}?</h1>
    <p>
      <strong>${client.name}</strong> asks to call the MCP server
      <strong>${server.name}</strong> (<code>${resourceUrl}</code>) of <strong>${workspace.name}</strong>, on
      your behalf.
    </p>
    <ul>
      <li>
        Its calls go through the workspace's rules as the agent
        <code>oauth:${session.member.email}:${client.id}</code>: some run at once, some wait for approvers,
        some are refused.
      </li>
      <li>Its tokens are good for this MCP server only. Admins can revoke them on the API keys page.</li>
      <li>
        After you decide, you return to
        <code>${returnsTo}</code>.
      </li>
    </ul>
    ${when(refused, () => html`<p class="error" role="alert">${refused}</p>`)}
    <form method="post" action="/app/oauth/${uid}" class="decide">
      <input type="hidden" name="_csrf" value="${session.csrfToken}" />
      <div class="buttons">
        ${when(!refused, () => html`<button type="submit" name="verdict" value="allow">Allow</button>`)}
        <button type="submit" name="verdict" value="refuse" class="secondary">Refuse</button>
      </div>
    </form>
  </div>`;
}
