/** The workspace's evidence chain: is it intact, what was published, and the export to check it offline. */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { exportEvidence } from '../../services/export-evidence.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import { newestCheckpoint } from '../../services/publish-checkpoints.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { html, time, when } from '../html.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';

export function evidencePages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/evidence', async (request, reply) => {
    const session = request.appSession!;
    const result = await verifyChain(ctx, session.workspace.id);
    const published = await newestCheckpoint(ctx, session.workspace.id);
    const body = html`<h1>Evidence chain</h1>
      <section class="card">
        <p>
          ${result.valid ? html`<span class="status approved">intact</span>` : html`<span class="status rejected">broken</span>`}
          ${result.checked} entries checked ${time(Date.parse(result.verified_at))}.
        </p>
        ${when(result.first_invalid, () => html`<p class="error" role="alert">First problem at entry ${result.first_invalid!.seq}: ${result.first_invalid!.reason.replaceAll('_', ' ')}.</p>`)}
        <dl class="facts">
          <dt>Head</dt>
          <dd>${result.head ? html`#${result.head.seq} <code>${result.head.hash}</code>` : '—'}</dd>
          <dt>Signed checkpoint</dt>
          <dd>
            ${result.checkpoint ? html`#${result.checkpoint.seq}, key <code>${result.checkpoint.key_id}</code>, ${time(Date.parse(result.checkpoint.signed_at))}` : '—'}
          </dd>
          <dt>Last published</dt>
          <dd>
            ${published ? html`#${published.seq} <code>${published.hash}</code>, ${time(published.published_at)}` : '—'}
          </dd>
        </dl>
        <p class="muted">
          Anyone can check this chain: <code>GET /api/v1/audit/verify</code>, and the public keys at
          <a href="/.well-known/approvals-audit-key">/.well-known/approvals-audit-key</a>. Keep the published
          checkpoints somewhere else (<code>GET /api/v1/audit/checkpoints</code>, or the
          <code>evidence.checkpoint</code> webhook event): a chain rewritten after one was published no longer
          holds it.
        </p>
        <p>
          <a href="/app/evidence/export" download>Download every entry</a> (JSON Lines) to check the chain
          offline with the SDK's <code>verifyEvidenceExport</code>.
        </p>
      </section>`;
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    return sendPage(reply, layout({ title: 'Evidence', session, active: 'evidence', pending }, body));
  });

  app.get('/app/evidence/export', async (request, reply) => {
    const { workspace } = request.appSession!;
    const day = new Date(ctx.now()).toISOString().slice(0, 10);
    return reply
      .type('application/x-ndjson; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="evidence-${workspace.slug}-${day}.jsonl"`)
      .header('Cache-Control', 'no-store')
      .send(Readable.from(exportEvidence(ctx, workspace.id)));
  });
}
