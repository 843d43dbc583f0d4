/** How a hold is shown to a person, in the inbox, on its page and behind a decision link. */
import type { Hold } from '../domain/hold.ts';
import { countdown, html, json, time, when } from './html.ts';

export function holdFacts(hold: Hold, { withTool = false } = {}) {
  return html`<dl class="facts">
    ${when(
      withTool,
      () =>
        html`<dt>Tool</dt>
          <dd><strong>${hold.toolName}</strong></dd>`,
    )}
    <dt>Connection</dt>
    <dd>${hold.connection}</dd>
    <dt>Agent</dt>
    <dd>
      ${hold.agentLabel ? html`${hold.agentLabel} (<code>${hold.agentId}</code>)` : html`<code>${hold.agentId}</code>`}
    </dd>
    <dt>Rule</dt>
    <dd>${hold.ruleName ?? '—'}</dd>
    <dt>Requested</dt>
    <dd>${time(hold.createdAt)}</dd>
    ${when(
      hold.status === 'pending',
      () =>
        html`<dt>Deadline</dt>
          <dd>${countdown(hold.expiresAt)}</dd>`,
    )}
    ${when(
      withTool && hold.approvalsRequired > 1,
      () =>
        html`<dt>Approvals</dt>
          <dd>${hold.approvalsReceived} of ${hold.approvalsRequired}</dd>`,
    )}
    <dt>Arguments</dt>
    <dd>${json(hold.arguments)}</dd>
    ${when(
      Object.keys(hold.context).length > 0,
      () =>
        html`<dt>Context</dt>
          <dd>${json(hold.context)}</dd>`,
    )}
  </dl>`;
}
