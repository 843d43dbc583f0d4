/** The webhook page's body, its notices, and the questions asked before a rotation or a removal. */
import type { AppSession } from '../../../services/sign-in.ts';
import { type Html, html, time } from '../../html.ts';
import { issueSummary } from '../form-fields.ts';
import { type EndpointCard, endpointCard } from './endpoint.ts';
import { type DeliveryLog, logSection } from './log.ts';

const NOTICES: Record<string, string> = {
  updated: 'Endpoint saved. Events go to the new URL, signed with the same secret.',
  enabled: 'Endpoint enabled again. Events that were waiting are sent now.',
  removed: 'Endpoint removed. No events are made or sent until you set one again.',
  tested: 'Test event queued: it shows in the delivery log below as webhook.test.',
};

/** What a flash notice says (`redelivered` with the count of events queued again); null: nothing. */
export function webhookNotice(notice: { key: string; count?: number } | null): string | null {
  if (notice?.key !== 'redelivered') return NOTICES[notice?.key ?? ''] ?? null;
  const count = notice.count ?? 0;
  return count === 0
    ? 'Nothing to redeliver: no dead events.'
    : `${count} ${count === 1 ? 'event is' : 'events are'} queued again for a fresh round of attempts.`;
}

export function webhookBody(
  session: AppSession,
  page: { before: Html | null; problems: string[]; endpoint: EndpointCard; log: DeliveryLog },
): Html {
  return html`<h1>Webhook</h1>
    ${page.before} ${issueSummary(page.problems)}
    <p class="muted">
      When a hold is approved, rejected or expires, the service sends an event (JSON, signed) to your
      endpoint, at least once: use the hold reference in <code>id</code> to ignore repeats.
    </p>
    ${endpointCard(session, page.endpoint)} ${logSection(session, page.log)}`;
}

export const rotateQuestion = (until: number) =>
  html`A new secret is made and shown once. The current one keeps signing beside it for 24 hours (until about
  ${time(until)}), then stops: update your receiver within that time.`;

export const rotatedNote = (until: number | null) =>
  html`<p>
    The old secret keeps signing too for 24 hours, until ${time(until)}: every event carries both signatures
    until then, so switch your receiver over before that time.
  </p>`;

export const removeQuestion = (url: string) =>
  html`<code>${url}</code>. No events are made or sent from now on, and its secret is deleted: an endpoint set
    later gets a new one. The delivery log stays.`;
