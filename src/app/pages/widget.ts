/**
 * The widget page: how to embed `<approvals-inbox>` in another tool, and a member's embed token
 * for it (short-lived, shown once, only ever the member's own holds).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { EMBED_TOKEN_TTL_MS, mintEmbedToken } from '../../services/channel-decisions.ts';
import { inboxOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html, time } from '../html.ts';
import { layout } from '../layout.ts';
import { type PageDeps, problemPage, sendPage } from '../plugin.ts';

export function widgetPages(app: FastifyInstance, { ctx }: PageDeps) {
  const page = async (session: AppSession, token: Html | null) => {
    const snippet = `<script src="${ctx.publicUrl}/widget.js" defer></script>\n<approvals-inbox token="EMBED_TOKEN"></approvals-inbox>`;
    const body = html`<h1>Widget</h1>
      <p>
        Put the actions waiting for you into another tool your team uses: add these two lines to one of its
        pages, with an embed token in place of <code>EMBED_TOKEN</code>.
      </p>
      <pre class="json">${snippet}</pre>
      ${token}
      <form method="post" action="/app/widget/token" class="card">
        <input type="hidden" name="_csrf" value="${session.csrfToken}" />
        <p>
          An embed token lets the widget show and decide <strong>your</strong> pending actions, as you, for
          ${EMBED_TOKEN_TTL_MS / 3_600_000} hours. Decisions made there show the channel “widget”.
        </p>
        <button type="submit">Make an embed token</button>
      </form>`;
    return layout(
      { title: 'Widget', session, active: 'widget', pending: (await inboxOf(ctx, session.member)).length },
      body,
    );
  };

  const viewerRefused = (session: AppSession, reply: FastifyReply) =>
    problemPage(reply, 403, 'Not allowed', 'Viewers do not decide, so they have no widget.', session);

  app.get('/app/widget', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    return sendPage(reply, await page(session, null));
  });

  app.post('/app/widget/token', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    const { token, expiresAt } = await mintEmbedToken(ctx, session.member);
    const shown = html`<section class="card" aria-labelledby="token-made">
      <h2 id="token-made">Your embed token</h2>
      <p><strong>Copy it now. It will not be shown again.</strong> It works until ${time(expiresAt)}.</p>
      <p class="secret" id="embed-token">${token}</p>
    </section>`;
    return sendPage(reply, await page(session, shown));
  });
}
