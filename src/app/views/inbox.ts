/**
 * The approver's desk (`/app/inbox`): the holds waiting as a compact list with the selected one in full
 * beside it, and a hold's own page. The panel itself is `hold-panel.ts`, a line `hold-line.ts`.
 */
import type { InboxChanges, InboxPage } from '../../services/inbox.ts';
import { type Html, html, when } from '../html.ts';
import { cursorText, inboxHref, type InboxUrl } from '../pages/inbox-url.ts';
import { holdLineView } from './hold-line.ts';
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
    ${input('q', html`Search <span class="muted">tool, agent, reference</span>`, 'search')}
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
        ${input('tool', html`Tool <span class="muted">glob: payments.*</span>`)}
        ${input('agent', html`Agent <span class="muted">id or label</span>`)}
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
  /** The selected hold's id (the first line's when none is chosen), and whom each line waits for. */
  chosen: string | null;
  forWhom: Map<string, { name: string }>;
}

/** The list of waiting holds, its filters and its pages. */
function queueView({ url, page, chosen, forWhom }: Desk): Html {
  const { lines } = page;
  const pageHref = (set: { after?: string; before?: string }) =>
    inboxHref(url, { after: undefined, before: undefined, hold: undefined, ...set });
  return html`<section class="queue" aria-labelledby="queue-title">
    <div class="heading">
      <h1 id="queue-title">
        Waiting for you <span class="badge">${page.matching}</span>${when(
          page.matching !== page.waiting,
          () => html` <span class="muted">of ${page.waiting}</span>`,
        )}
      </h1>
      <button type="button" class="link keys-help" aria-keyshortcuts="?">Keyboard: ?</button>
    </div>
    ${filterForm(url, page)}
    <p class="arrivals" role="status"><a href="${pageHref({})}" hidden></a></p>
    ${when(page.capped, () => html`<p class="notice">More holds wait than the inbox lists at once: filter to see the rest.</p>`)}
    ${
      lines.length === 0
        ? html`<p class="empty card">
            ${page.waiting === 0 ? 'Nothing waits for your decision.' : 'No waiting hold matches these filters.'}
          </p>`
        : html`<ol class="lines" aria-label="Holds waiting for you">
            ${lines.map((line) => holdLineView(line, { href: inboxHref(url, { hold: line.id }), selected: line.id === chosen, forWhom: forWhom.get(line.id)?.name }))}
          </ol>`
    }
    <nav class="pager" aria-label="Pages">
      ${when(page.previous, () => html`<a href="${pageHref({ before: cursorText(page.previous!) })}" rel="prev">← Earlier</a>`)}
      ${when(page.next, () => html`<a href="${pageHref({ after: cursorText(page.next!) })}" rel="next">Later →</a>`)}
    </nav>
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
