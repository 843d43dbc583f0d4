/** The Evidence page: is the workspace's chain intact, what was published, and where to check it. */
import type { newestCheckpoint } from '../../services/publish-checkpoints.ts';
import type { verifyChain } from '../../services/verify-chain.ts';
import { type Html, html, time, when } from '../html.ts';

export function evidenceView(
  result: Awaited<ReturnType<typeof verifyChain>>,
  published: Awaited<ReturnType<typeof newestCheckpoint>>,
): Html {
  return html`<h1>Evidence chain</h1>
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
}
