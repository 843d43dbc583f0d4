/**
 * The widget page: how to embed `<approvals-inbox>` in another tool, and a member's embed token
 * for it (short-lived, shown once, only ever the member's own holds).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  EMBED_TOKEN_TTL_MS,
  embedTokensFor,
  mintEmbedToken,
  revokeEmbedToken,
} from '../../services/channel-decisions.ts';
import { ServiceError } from '../../services/errors.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import type { EmbedTokenSummary } from '../../store/notifications.ts';
import { copyable } from '../copyable.ts';
import { type Html, html, time } from '../html.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';

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

export function widgetPages(app: FastifyInstance, { ctx }: PageDeps) {
  const page = async (session: AppSession, token: Html | null, notice: Html | null = null) => {
    const snippet = `<script src="${ctx.publicUrl}/widget.js" defer></script>\n<approvals-inbox token="EMBED_TOKEN"></approvals-inbox>`;
    const body = html`<h1>Widget</h1>
      <p>
        Put the actions waiting for you into another tool your team uses: add these two lines to one of its
        pages, with an embed token in place of <code>EMBED_TOKEN</code>.
      </p>
      <pre class="json" tabindex="0">${snippet}</pre>
      ${notice} ${token}
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
      ${tokenTable(await embedTokensFor(ctx, session.member), session)}`;
    return layout(
      {
        title: 'Widget',
        session,
        active: 'widget',
        pending: (await waitingIdsOf(ctx, session.member)).length,
      },
      body,
    );
  };

  const viewerRefused = (session: AppSession, reply: FastifyReply) =>
    problemPage(reply, 403, 'Not allowed', 'Viewers do not decide, so they have no widget.', session);

  app.get<{ Querystring: { notice?: string } }>('/app/widget', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    const notice =
      request.query.notice === 'revoked'
        ? html`<p class="notice" role="status">The embed token is revoked.</p>`
        : null;
    return sendPage(reply, await page(session, null, notice));
  });

  app.post<{ Body: Form }>('/app/widget/tokens/revoke', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    try {
      await revokeEmbedToken(ctx, session.member, field(request.body, 'token'));
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      const missing = html`<p class="error" role="alert">No such embed token, or not yours to revoke.</p>`;
      return sendPage(reply, await page(session, null, missing), 404);
    }
    return reply.redirect('/app/widget?notice=revoked', 303);
  });

  app.post('/app/widget/token', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    const { token, expiresAt } = await mintEmbedToken(ctx, session.member);
    const shown = html`<section class="card" aria-labelledby="token-made">
      <h2 id="token-made">Your embed token</h2>
      <p><strong>Copy it now. It will not be shown again.</strong> It works until ${time(expiresAt)}.</p>
      ${copyable('embed-token', token, 'the token')}
    </section>`;
    return sendPage(reply, await page(session, shown));
  });
}
