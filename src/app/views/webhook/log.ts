/**
 * The webhook's delivery log: newest first, each event with every attempt and its outcome, filtered by
 * state; a dead event can be sent again, one or all at once.
 */
import { STATUS_CODES } from 'node:http';
import type { deliveryLog } from '../../../services/webhooks.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { type Html, html, time, when } from '../../html.ts';
import { csrfField, selected } from '../form-fields.ts';

export const WEBHOOK_PAGE = '/app/admin/webhook';
export const DELIVERY_STATES = ['pending', 'delivered', 'dead'] as const;
/** How many events the log shows. */
export const SHOWN = 100;
/** How many dead letters are counted for the "Redeliver all dead" button. */
export const DEAD_COUNTED = 1000;

type LogEntry = Awaited<ReturnType<typeof deliveryLog>>[number];
type Attempt = LogEntry['attempts'][number];

export interface DeliveryLog {
  entries: LogEntry[];
  /** The state shown (none: every state). */
  filter: string | undefined;
  /** Dead events, counted up to DEAD_COUNTED. */
  dead: number;
  /** Whether no endpoint takes events now (none, or disabled): pending ones wait. */
  disabled: boolean;
}

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/** A time to the second (attempts come seconds apart); app.js shows it in the reader's zone. */
const exactTime = (iso: string) =>
  html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 19)} UTC</time>`;

const duration = (value: number) => (value < 1000 ? `${value} ms` : `${(value / 1000).toFixed(1)} s`);

/** An attempt's outcome: the receiver's status code, or why there was no answer. */
function outcome(attempt: Attempt): Html {
  if (attempt.status_code === null) return html`<span class="bad">${attempt.error ?? 'no answer'}</span>`;
  const code = attempt.status_code;
  const phrase = STATUS_CODES[code] ? ` ${STATUS_CODES[code]}` : '';
  return html`<span class="${code >= 200 && code < 300 ? 'ok' : 'bad'}">HTTP ${code}${phrase}</span>`;
}

const STATE_CLASS: Record<string, string> = { delivered: 'approved', pending: 'pending', dead: 'rejected' };
const stateBadge = (state: string) => html`<span class="status ${STATE_CLASS[state] ?? ''}">${state}</span>`;

function attemptList(entry: LogEntry): Html {
  return html`<table class="attempts">
    <thead>
      <tr>
        <th>#</th>
        <th>Time</th>
        <th>Duration</th>
        <th>Result</th>
      </tr>
    </thead>
    <tbody>
      ${entry.attempts.map(
        (attempt) =>
          html`<tr>
            <td>${attempt.attempt}</td>
            <td>${exactTime(attempt.at!)}</td>
            <td>${duration(attempt.duration_ms)}</td>
            <td>${outcome(attempt)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** What the event is about: a hold (linked), the evidence (a checkpoint), or nothing (a test). */
function subject(entry: LogEntry): Html {
  if (entry.event === 'evidence.checkpoint')
    return html`<a href="/app/evidence"><code>${entry.hold}</code></a>`;
  if (entry.event === 'webhook.test') return html`<code>${entry.hold}</code>`;
  return html`<a href="/app/holds/${entry.hold}"><code>${entry.hold}</code></a>`;
}

const redeliverButton = (session: AppSession, entry: LogEntry) =>
  html`<form method="post" action="${WEBHOOK_PAGE}/redeliver">
    ${csrfField(session)}
    <input type="hidden" name="id" value="${entry.id}" />
    <button type="submit" class="secondary">
      Redeliver<span class="visually-hidden"> ${entry.event} for ${entry.hold}</span>
    </button>
  </form>`;

function attempts(entry: LogEntry, disabled: boolean): Html {
  const last = entry.attempts.at(-1);
  const count = entry.attempts.length;
  const waiting =
    entry.state !== 'pending'
      ? null
      : disabled
        ? html` · <span class="muted">waiting: no enabled endpoint</span>`
        : entry.next_attempt_at
          ? html` · next attempt ${exactTime(entry.next_attempt_at)}`
          : null;
  return count === 0
    ? html`<span class="muted">No attempt yet</span>${waiting}`
    : html`<details>
        <summary>
          <span class="attempt-count">${count} ${count === 1 ? 'attempt' : 'attempts'}</span> · last:
          ${outcome(last!)}${waiting}
        </summary>
        <p class="muted">Delivery <code>${entry.id}</code> (<code>X-Service-Delivery</code>)</p>
        ${attemptList(entry)}
      </details>`;
}

function logRow(session: AppSession, entry: LogEntry, disabled: boolean): Html {
  return html`<tr class="event">
      <td><code>${entry.event}</code></td>
      <td data-label="Hold">${subject(entry)}</td>
      <td data-label="State">${stateBadge(entry.state)}</td>
      <td data-label="Created">${time(ms(entry.created_at))}</td>
      <td data-label="Delivered">
        ${entry.state === 'dead' ? redeliverButton(session, entry) : time(ms(entry.delivered_at))}
      </td>
    </tr>
    <tr class="tries">
      <td colspan="5">${attempts(entry, disabled)}</td>
    </tr>`;
}

const filterForm = (filter: string | undefined) =>
  html`<form method="get" action="${WEBHOOK_PAGE}" class="filters" role="search">
    <div>
      <label for="f-state">State</label
      ><select id="f-state" name="state">
        <option value="">Any</option>
        ${DELIVERY_STATES.map((s) => html`<option value="${s}" ${selected(filter === s)}>${s}</option>`)}
      </select>
    </div>
    <div><button type="submit" class="secondary">Filter</button></div>
  </form>`;

export function logSection(session: AppSession, log: DeliveryLog): Html {
  const { entries, filter, dead } = log;
  return html`<section class="card wh" aria-labelledby="log-title">
    <div class="heading">
      <h2 id="log-title">Delivery log</h2>
      ${when(
        dead > 0,
        () =>
          html`<form method="post" action="${WEBHOOK_PAGE}/redeliver">
            ${csrfField(session)}
            <input type="hidden" name="all" value="dead" />
            <button type="submit">
              Redeliver all dead (${dead >= DEAD_COUNTED ? `${DEAD_COUNTED}+` : dead})
            </button>
          </form>`,
      )}
    </div>
    <p class="muted">
      Newest first. Each event is tried up to 25 times over about 2.3 days (only a 2xx answer counts); then it
      is <em>dead</em> and waits here to be redelivered.
    </p>
    ${filterForm(filter)}
    ${
      entries.length === 0
        ? html`<p class="empty">${filter ? `No ${filter} events.` : 'No events yet.'}</p>`
        : html`<table class="responsive log">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Hold</th>
                  <th>State</th>
                  <th>Created</th>
                  <th>Delivered</th>
                </tr>
              </thead>
              <tbody>
                ${entries.map((entry) => logRow(session, entry, log.disabled))}
              </tbody>
            </table>
            ${when(entries.length >= SHOWN, () => html`<p class="muted">The newest ${SHOWN} are shown.</p>`)}`
    }
  </section>`;
}
