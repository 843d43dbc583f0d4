/**
 * The approver's desk (`/app/inbox`): the holds waiting as a compact list with the selected one in full
 * beside it, and a hold's own page. The panel itself is `hold-panel.ts`, a line `hold-line.ts`.
 */
import type { InboxChanges, InboxPage } from '../../services/inbox.ts';
import { copyable } from '../copyable.ts';
import { type Html, html, when } from '../html.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { filterFields, inboxHref, type InboxUrl } from '../pages/inbox-url.ts';
import { csrfField } from './form-fields.ts';
import { holdLineView } from './hold-line.ts';
import { foldOnPhone } from './fold.ts';
import { keysDialog } from './inbox-keys.ts';

/** What a decision became, said once on the page it returns to (a flash notice). */
export const DECISION_NOTICES: Record<string, string> = {
  approved: 'Approved.',
  rejected: 'Rejected.',
  recorded: 'Your approval is recorded; more are needed.',
  closed: 'Not decided: that hold was decided or expired before your answer.',
  already_decided: 'Not decided: you have decided that hold already; each member counts once.',
};

/** In words, why a shown hold no longer waits for the reader: `Approved by Ada Admin`. */
export function leftInWords(left: InboxChanges['left'][number]): string {
  const by = (verdict: string) => {
    const names = left.decisions.filter((d) => d.verdict === verdict).map((d) => (d.mine ? 'you' : d.name));
    return names.length ? ` by ${names.join(' and ')}` : '';
  };
  switch (left.status) {
    case 'approved':
    case 'executed':
    case 'failed':
      return `Approved${by('approve')}${left.status === 'approved' ? '' : ` · ${left.status}`}`;
    case 'rejected':
      return left.withdrawn ? 'Withdrawn by the agent' : `Rejected${by('reject')}`;
    case 'expired':
      return 'Expired without a decision';
    case 'pending': {
      const mine = left.decisions.find((d) => d.mine);
      return mine
        ? `You ${mine.verdict === 'approve' ? 'approved' : 'rejected'}; it waits for others`
        : 'No longer waits for you';
    }
    default:
      return left.status.replace('_', ' ');
  }
}

function filterForm(url: InboxUrl, page: InboxPage): Html {
  const input = (name: 'tool' | 'agent' | 'q', label: Html | string, type = 'text') =>
    html`<div class="${name === 'q' ? 'search' : null}">
      <label for="f-${name}">${label}</label
      ><input id="f-${name}" name="${name}" type="${type}" value="${url[name] ?? ''}" maxlength="200" />
    </div>`;
  const select = (name: 'connection' | 'rule' | 'env', label: string, values: string[]) =>
    html`<div>
      <label for="f-${name}">${label}</label
      ><select id="f-${name}" name="${name}">
        <option value="">Any</option>
        ${values.map((value) => html`<option value="${value}" ${url[name] === value ? html`selected` : null}>${value}</option>`)}
      </select>
    </div>`;
  const narrowed = [url.tool, url.agent, url.connection, url.rule, url.env].some(Boolean);
  const changed = narrowed || !!url.q || url.order === 'newest';
  return html`<form
    method="get"
    action="/app/inbox"
    class="filters"
    role="search"
    aria-label="Filter the inbox"
  >
    ${input('q', html`Search <span class="muted">values, tool, agent, reference</span>`, 'search')}
    <div>
      <label for="f-order">Order</label
      ><select id="f-order" name="order">
        <option value="deadline">Deadline soonest</option>
        <option value="newest" ${url.order === 'newest' ? html`selected` : null}>Newest first</option>
      </select>
    </div>
    <div class="filter-buttons">
      <button type="submit">Filter</button>${when(changed, () => html` <a href="/app/inbox">Clear</a>`)}
    </div>
    <details class="more-filters" ${narrowed ? html`open` : null}>
      <summary>More filters${narrowed ? ' (in use)' : ''}</summary>
      <div>
        ${input('tool', html`Tool <span class="muted">part of the name, or payments.*</span>`)}
        ${input('agent', html`Agent <span class="muted">part of id or label</span>`)}
        ${select('connection', 'Connection', page.choices.connections)}
        ${select('rule', 'Rule', page.choices.rules)}
        ${select('env', 'Environment', page.choices.environments)}
      </div>
    </details>
  </form>`;
}

export interface Desk {
  url: InboxUrl;
  page: InboxPage;
  /** The selected hold's id (the first line's when none is chosen). */
  chosen: string | null;
  session: AppSession;
  /** Who said "I'm on it" for which of the lines (claims.ts), when known. */
  claims?: ReadonlyMap<string, { name: string }>;
  /** This service's address, for the first hold's command. */
  publicUrl: string;
}

/** Pages either side of the current one that get a link of their own. */
const NEARBY = 2;

/** First, previous, the pages around this one, next, last; the current page is marked, not linked. */
function pagerView(page: InboxPage, hrefOf: (page: number) => string): Html | null {
  if (page.pages <= 1) return null;
  const link = (to: number, text: string, rel?: string) =>
    html`<a href="${hrefOf(to)}" ${rel ? html`rel="${rel}"` : null}>${text}</a>`;
  const numbers: number[] = [];
  for (let n = Math.max(1, page.page - NEARBY); n <= Math.min(page.pages, page.page + NEARBY); n++)
    numbers.push(n);
  return html`<nav class="pager" aria-label="Pages">
    ${when(page.page > 1, () => html`${link(1, '« First')} ${link(page.page - 1, '← Previous', 'prev')}`)}
    <span class="pages"
      >${numbers.map((n) =>
        n === page.page ? html`<span aria-current="page">${n}</span> ` : html`${link(n, String(n))} `,
      )}</span
    >
    ${when(page.page < page.pages, () => html`${link(page.page + 1, 'Next →', 'next')} ${link(page.pages, 'Last »')}`)}
  </nav>`;
}

/** `1–50 of 614`: which of the matching holds the page shows. */
function rangeText(page: InboxPage, filtered: boolean): string {
  const of = `${page.matching}${filtered ? ' matching' : ''}`;
  return page.lines.length === 0
    ? `0 of ${of}`
    : `${page.start + 1}–${page.start + page.lines.length} of ${of}`;
}

/**
 * The bulk decision's form: the checked lines' boxes belong to it (`form="bulk"`), and "Select all"
 * posts the filter instead of ids. Without a script it is a plain form.
 */
function bulkBar({ url, page, session }: Desk): Html {
  return html`<form id="bulk" method="post" action="/app/inbox/bulk" class="bulk-bar">
    ${csrfField(session)}
    ${filterFields(url).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
    <input type="hidden" name="back" value="${inboxHref(url, { hold: undefined })}" />
    <button type="submit" name="verdict" value="approve">Approve selected…</button>
    <button type="submit" name="verdict" value="reject">Reject selected…</button>
    <button type="submit" name="all" value="1" class="link">
      Select all ${page.matching} matching this filter
    </button>
  </form>`;
}

/** An empty inbox says how holds get here: an API key, then a first hold, as a command to copy. */
function emptyView({ session, publicUrl }: Desk): Html {
  const hold = JSON.stringify({
    tool_name: 'send_invoice',
    arguments: { amount: 1200 },
    agent_identity: { id: 'billing-bot' },
    idempotency_key: 'first-hold',
  });
  const command = `curl -s ${publicUrl}/api/v1/holds -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '${hold}'`;
  return html`<div class="empty card">
    <p>Nothing waits for your decision.</p>
    <p>
      Holds come here when an agent asks with an API key of this workspace.
      ${
        session.member.role === 'admin'
          ? html`Make one on <a href="/app/admin/keys">Keys</a>, set it as <code>KEY</code>, then submit a
              first hold:`
          : html`An admin makes one; with it set as <code>KEY</code>, submit a first hold:`
      }
    </p>
    ${copyable('first-hold', command, 'command')}
    <p><a href="/docs/holds">The Hold API</a> says what an agent sends and gets back.</p>
  </div>`;
}

/**
 * The list of waiting holds, its filters and its pages. The heading counts what waits for the reader,
 * as the header does; `1–50 of 614` counts what matches the filters.
 */
function queueView(desk: Desk): Html {
  const { url, page, chosen, claims } = desk;
  const { lines } = page;
  const filtered = filterFields(url).length > 0;
  const pageHref = (n: number) => inboxHref(url, { page: n > 1 ? String(n) : undefined, hold: undefined });
  return html`<section class="queue" aria-labelledby="queue-title">
    <div class="heading">
      <h1 id="queue-title">Waiting for you <span class="badge">${page.waiting}</span></h1>
      <button type="button" class="link keys-help" aria-keyshortcuts="?">Keyboard: ?</button>
    </div>
    ${foldOnPhone('Search and filters', filtered, filterForm(url, page))}
    <p class="arrivals" role="status"><a href="${pageHref(1)}" hidden></a></p>
    ${when(page.capped, () => html`<p class="notice">More holds wait than the inbox lists at once: filter to see the rest.</p>`)}
    ${
      lines.length === 0
        ? page.waiting === 0
          ? emptyView(desk)
          : html`<p class="empty card">No waiting hold matches these filters.</p>`
        : html`${when(desk.session.member.role !== 'viewer', () => bulkBar(desk))}
            <p class="range">${rangeText(page, filtered)}</p>
            <ol class="lines" aria-label="Holds waiting for you">
              ${lines.map((line) => holdLineView(line, { href: inboxHref(url, { hold: line.id }), selected: line.id === chosen, claimedBy: claims?.get(line.id)?.name }))}
            </ol>`
    }
    ${pagerView(page, pageHref)}
  </section>`;
}

/**
 * The desk: the queue, and the selected hold's `panel` beside it. `selection` says whether the hold
 * was chosen in the URL, shown by default (the first line), or there is none.
 */
export function deskView(desk: Desk, panel: Html | null, drawnAt: number): Html {
  const selection = desk.url.hold && panel ? 'chosen' : panel ? 'default' : 'none';
  const back = inboxHref(desk.url, { hold: undefined });
  return html`<div class="desk" data-selection="${selection}" data-drawn-at="${drawnAt}">
      ${queueView(desk)}
      <section class="detail" aria-label="Selected hold">
        ${when(selection === 'chosen', () => html`<p class="back-to-list"><a href="${back}">← All waiting holds</a></p>`)}
        ${panel ?? html`<p class="empty card">Select a hold to see it in full.</p>`}
      </section>
    </div>
    ${keysDialog()}`;
}

/** A hold's own page (`/app/holds/<id>`), the link e-mails and messages send. */
export const holdPageView = (panel: Html, drawnAt: number) =>
  html`<div class="hold-page" data-drawn-at="${drawnAt}">
      <p><a href="/app/inbox">← Inbox</a></p>
      ${panel}
    </div>
    ${keysDialog()}`;

/** Why a decision was not made, with the way back to the inbox. */
export const notDecidedView = (title: string, message: string) =>
  html`<div class="narrow card">
    <h1>${title}</h1>
    <p>${message}</p>
    <p><a href="/app/inbox">Back to the inbox</a></p>
  </div>`;
