/**
 * The webhook's endpoint: its state, URL and secret (never the secret itself), the form that sets or
 * changes the URL, its actions, and the box that shows a new secret on the one page that made it.
 */
import type { AppSession } from '../../../services/sign-in.ts';
import type { WebhookEndpoint } from '../../../store/webhooks.ts';
import { copyable } from '../../copyable.ts';
import type { FieldErrors } from '../../forms/form.ts';
import { type Html, html, time, when } from '../../html.ts';
import { configFields, describedBy, fieldError } from '../form-fields.ts';
import { WEBHOOK_PAGE } from './log.ts';

export interface EndpointCard {
  endpoint: WebhookEndpoint | undefined;
  /** The configuration's version its forms were read at. */
  version: number;
  now: number;
  /** The URL in the form: the stored one, or a refused one as typed. */
  url: string;
  errors: FieldErrors;
}

function stateOf(endpoint: WebhookEndpoint | undefined): Html {
  if (!endpoint) return html`<span class="status">none</span> <span class="muted">No events are made.</span>`;
  if (endpoint.disabledAt === null) return html`<span class="status approved">active</span>`;
  return html`<span class="status rejected">disabled</span> since ${time(endpoint.disabledAt)}
    <p class="muted" style="margin:0.25rem 0 0">
      The receiver answered <code>410 Gone</code>, so nothing is sent. New events wait in the queue; save the
      URL (the same or a new one) to enable the endpoint again.
    </p>`;
}

function actions(session: AppSession, version: number, endpoint: WebhookEndpoint): Html {
  const action = (verb: string, label: string, style: string) =>
    html`<form method="post" action="${WEBHOOK_PAGE}/${verb}">
      ${configFields(session, version)}
      <button type="submit" class="${style}">${label}</button>
    </form>`;
  return html`<div class="row actions">
    ${when(
      endpoint.disabledAt !== null,
      () =>
        html`<form method="post" action="${WEBHOOK_PAGE}">
          ${configFields(session, version)}
          <input type="hidden" name="url" value="${endpoint.url}" />
          <button type="submit">Enable again</button>
        </form>`,
    )}
    ${action('test', 'Send test event', 'secondary')} ${action('rotate', 'Rotate secret…', 'secondary')}
    ${action('delete', 'Remove endpoint…', 'link')}
  </div>`;
}

function facts(endpoint: WebhookEndpoint, now: number): Html {
  return html`<dt>URL</dt>
    <dd><code class="url">${endpoint.url}</code></dd>
    <dt>Set up</dt>
    <dd>${time(endpoint.createdAt)}</dd>
    <dt>Secret</dt>
    <dd>
      <code>whsec_…</code>
      <span class="muted">(stored encrypted; shown only on the page that made it)</span>
      ${when(
        endpoint.previousSecretSealed !== null && (endpoint.previousUntil ?? 0) > now,
        () => html`<br />The previous secret also signs every event until ${time(endpoint.previousUntil)}.`,
      )}
    </dd>`;
}

function urlForm(session: AppSession, card: EndpointCard): Html {
  const error = card.errors.url;
  return html`<form method="post" action="${WEBHOOK_PAGE}" class="decide">
    ${configFields(session, card.version)}
    <label for="w-url"
      >${card.endpoint ? 'Change the URL' : 'Endpoint URL'}
      <span class="muted"
        >(http or https; your receiver of <code>hold.approved</code>, <code>hold.rejected</code> and
        <code>hold.expired</code>)</span
      ></label
    >
    <input
      id="w-url"
      name="url"
      type="url"
      required
      maxlength="2000"
      placeholder="https://example.com/hooks/approvals"
      autocomplete="off"
      spellcheck="false"
      value="${card.url}"
      ${describedBy('w-url', error)}
    />
    ${fieldError('w-url', error)}
    <div class="buttons">
      <button type="submit">${card.endpoint ? 'Save URL' : 'Set endpoint'}</button>
    </div>
  </form>`;
}

export function endpointCard(session: AppSession, card: EndpointCard): Html {
  const { endpoint } = card;
  return html`<section class="card wh" aria-labelledby="endpoint-title">
    <div class="heading">
      <h2 id="endpoint-title">Endpoint</h2>
      ${when(endpoint, () => actions(session, card.version, endpoint!))}
    </div>
    <dl class="facts">
      <dt>State</dt>
      <dd id="endpoint-state">${stateOf(endpoint)}</dd>
      ${when(endpoint, () => facts(endpoint!, card.now))}
    </dl>
    ${urlForm(session, card)}
  </section>`;
}

/** A secret, shown this once: the answer to the POST that made it, never stored to be shown again. */
export function secretBox(title: string, secret: string, extra: Html | null): Html {
  return html`<section class="card" aria-labelledby="secret-made">
    <h2 id="secret-made">${title}</h2>
    <p>
      <strong>Copy this secret now. It will not be shown again</strong>: it is stored encrypted, and no page
      shows it.
    </p>
    ${copyable('new-secret-value', secret, 'the secret')} ${extra}
    <p class="muted">
      Your receiver checks <code>X-Service-Signature</code>: the hex HMAC-SHA256 of the raw body, keyed with
      this secret exactly as shown (<code>whsec_</code> included). Standard Webhooks verifiers work too, with
      the <code>webhook-signature</code> header.
    </p>
  </section>`;
}
