/** The Widget page: how to embed `<approvals-inbox>`, a token just made, and the tokens in use. */
import { EMBED_TOKEN_TTL_MS } from '../../services/channel-decisions.ts';
import type { AppSession } from '../../services/sign-in.ts';
import type { EmbedTokenSummary } from '../../store/notifications.ts';
import { copyable } from '../copyable.ts';
import { type Html, html, time } from '../html.ts';

/** The tokens that still work, each with a button that revokes it (an admin sees the workspace's). */
function tokenTable(tokens: EmbedTokenSummary[], session: AppSession): Html {
  if (tokens.length === 0) return html`<p class="empty card">No embed tokens in use.</p>`;
  return html`<table class="responsive">
    <thead>
      <tr>
        <th>Made by</th>
        <th>Made</th>
        <th>Works until</th>
        <th>Last used</th>
        <th><span class="muted">Action</span></th>
      </tr>
    </thead>
    <tbody>
      ${tokens.map(
        (token) =>
          html`<tr>
            <td data-label="Made by">${token.memberName}</td>
            <td data-label="Made">${time(token.createdAt)}</td>
            <td data-label="Works until">${time(token.expiresAt)}</td>
            <td data-label="Last used">${token.lastUsedAt === null ? 'never' : time(token.lastUsedAt)}</td>
            <td>
              <form method="post" action="/app/widget/tokens/revoke">
                <input type="hidden" name="_csrf" value="${session.csrfToken}" />
                <input type="hidden" name="token" value="${token.tokenHash}" />
                <button type="submit" class="secondary">Revoke</button>
              </form>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** A token just made: shown this once. */
export const madeTokenView = (token: string, expiresAt: number) =>
  html`<section class="card" aria-labelledby="token-made">
    <h2 id="token-made">Your embed token</h2>
    <p><strong>Copy it now. It will not be shown again.</strong> It works until ${time(expiresAt)}.</p>
    ${copyable('embed-token', token, 'the token')}
  </section>`;

export const NO_SUCH_TOKEN = html`<p class="error" role="alert">
  No such embed token, or not yours to revoke.
</p>`;

/** `above`: what goes above the form that makes a token (a problem, or the token just made). */
export function widgetView(
  session: AppSession,
  publicUrl: string,
  tokens: EmbedTokenSummary[],
  above: Html | null,
): Html {
  const snippet = `<script src="${publicUrl}/widget.js" defer></script>\n<approvals-inbox token="EMBED_TOKEN"></approvals-inbox>`;
  return html`<h1>Widget</h1>
    <p>
      Put the actions waiting for you into another tool your team uses: add these two lines to one of its
      pages, with an embed token in place of <code>EMBED_TOKEN</code>.
    </p>
    <pre class="json" tabindex="0">${snippet}</pre>
    ${above}
    <form method="post" action="/app/widget/token" class="card">
      <input type="hidden" name="_csrf" value="${session.csrfToken}" />
      <p>
        An embed token lets the widget show and decide <strong>your</strong> pending actions, as you, for
        ${EMBED_TOKEN_TTL_MS / 3_600_000} hours. Decisions made there show the channel “widget”.
      </p>
      <button type="submit">Make an embed token</button>
    </form>
    <h2>Embed tokens in use</h2>
    <p class="muted">Revoking a token stops the widget that uses it at its next request.</p>
    ${tokenTable(tokens, session)}`;
}
