/**
 * The approver's desk: the holds waiting for me as a compact list (filters and paging in the URL) with
 * the selected one in full beside it; a hold's own page; deciding; what changed since a page was drawn
 * (the live updates mark it in place); live events.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import { decideHold } from '../../services/decide-hold.ts';
import { ServiceError } from '../../services/errors.ts';
import { followUpLog } from '../../services/follow-up-log.ts';
import { passkeyPrompt } from '../../services/passkeys.ts';
import { delegatedFor, fourEyesOf, submissionFacts } from '../../services/hold-context.ts';
import { getHold } from '../../services/read-hold.ts';
import {
  type InboxChanges,
  type InboxCursor,
  type InboxFilters,
  type InboxPage,
  inboxChanges,
  inboxPage,
  holdDetail,
  waitingIdsOf,
} from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { appPath } from '../app-path.ts';
import { type Html, html, when } from '../html.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import { blockerInWords } from '../views/four-eyes.ts';
import { holdLineView } from '../views/hold-line.ts';
import { holdPanelView } from '../views/hold-panel.ts';
import { holdArguments, TOO_LARGE_TO_APPROVE } from '../hold-view.ts';

const CURSOR = /^(-?\d{1,16})_(svc_pa_[A-Za-z0-9_-]{1,64})$/;
const text = (max: number) => z.string().trim().max(max).optional();

/** The inbox's URL: filters, order, a page cursor and the selected hold. */
const InboxUrl = z.object({
  tool: text(200),
  connection: text(200),
  agent: text(200),
  rule: text(200),
  env: z.enum(['', 'live', 'test']).optional(),
  q: text(200),
  order: z.enum(['deadline', 'newest']).optional(),
  after: z.string().regex(CURSOR).optional(),
  before: z.string().regex(CURSOR).optional(),
  hold: z.string().regex(HOLD_REFERENCE_PATTERN).optional(),
  notice: z.string().max(40).optional(),
});
type InboxUrl = z.infer<typeof InboxUrl>;

/** The decision form: where to return is a path of the app (anything else returns to the inbox). */
const DecideForm = z.object({
  verdict: z.enum(['approve', 'reject']),
  comment: z.string(),
  back: z.string().transform((value) => appPath(value) ?? '/app/inbox'),
  next: z.string().transform((value) => (HOLD_REFERENCE_PATTERN.test(value) ? value : null)),
});

const FIELD_NAMES: Record<string, string> = {
  tool: 'Tool',
  connection: 'Connection',
  agent: 'Agent',
  rule: 'Rule',
  env: 'Environment',
  q: 'Search',
  order: 'Order',
  after: 'Page',
  before: 'Page',
  hold: 'Hold',
  notice: 'Notice',
};

/** The parsed URL, or which of its fields is not understood (named, never echoed). */
function parseInboxUrl(query: unknown): { url: InboxUrl } | { problem: string } {
  const parsed = InboxUrl.safeParse(query ?? {});
  if (parsed.success) return { url: parsed.data };
  const names = [
    ...new Set(parsed.error.issues.map((issue) => FIELD_NAMES[String(issue.path[0])] ?? 'A field')),
  ];
  return { problem: `${names.join(', ')}: not understood. Change the filter or start again from the inbox.` };
}

const cursorOf = (value: string | undefined): InboxCursor | null => {
  const match = value?.match(CURSOR);
  return match ? { key: Number(match[1]), id: match[2]! } : null;
};
const cursorText = (cursor: InboxCursor) => `${cursor.key}_${cursor.id}`;

function filtersOf(url: InboxUrl): InboxFilters {
  return {
    tool: url.tool || undefined,
    connection: url.connection || undefined,
    agent: url.agent || undefined,
    rule: url.rule || undefined,
    environment: url.env || undefined,
    text: url.q || undefined,
  };
}

/** `/app/inbox?…` with the URL's filters and order, changed by `set` (an undefined value drops a key). */
function inboxHref(url: InboxUrl, set: Partial<Record<keyof InboxUrl, string | undefined>> = {}): string {
  const kept: [string, string][] = [];
  for (const key of [
    'tool',
    'connection',
    'agent',
    'rule',
    'env',
    'q',
    'order',
    'after',
    'before',
    'hold',
  ] as const) {
    const value = key in set ? set[key] : url[key];
    if (value) kept.push([key, value]);
  }
  const query = new URLSearchParams(kept).toString();
  return query ? `/app/inbox?${query}` : '/app/inbox';
}

const NOTICES: Record<string, string> = {
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

/** `path` with these query parameters set (null ones dropped), keeping the ones it has. */
function withQuery(path: string, set: Record<string, string | null>): string {
  const url = new URL(path, 'http://app.invalid');
  for (const [key, value] of Object.entries(set)) {
    if (value === null) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  return `${url.pathname}${url.search}`;
}

/** The keyboard's keys, opened with `?` (app.js), and the confirmation of a decision made with them. */
const keysDialog = () =>
  html`<dialog id="keys" aria-labelledby="keys-title">
      <h2 id="keys-title">Keyboard</h2>
      <dl class="keys">
        <dt><kbd>j</kbd> / <kbd>k</kbd></dt>
        <dd>next / previous hold</dd>
        <dt><kbd>Enter</kbd></dt>
        <dd>open the hold</dd>
        <dt><kbd>a</kbd></dt>
        <dd>approve the open hold (asks first)</dd>
        <dt><kbd>r</kbd></dt>
        <dd>reject the open hold (asks first)</dd>
        <dt><kbd>c</kbd></dt>
        <dd>write a comment</dd>
        <dt><kbd>?</kbd></dt>
        <dd>this list</dd>
      </dl>
      <form method="dialog"><button type="submit">Close</button></form>
    </dialog>
    <dialog id="confirm" aria-labelledby="confirm-title">
      <form method="dialog">
        <h2 id="confirm-title"></h2>
        <p class="confirm-action"><code></code></p>
        <p class="muted confirm-agent"></p>
        <div class="buttons">
          <button type="submit" value="yes" class="confirm-yes"></button>
          <button type="submit" value="no" class="secondary">Cancel</button>
        </div>
      </form>
    </dialog>`;

export function inboxPages(app: FastifyInstance, { ctx }: PageDeps) {
  const pendingOf = async (session: AppSession) => (await waitingIdsOf(ctx, session.member)).length;

  /** The selected hold in full, or null when it is not of this workspace. */
  async function panelOf(session: AppSession, id: string, back: string, next: string | null) {
    const detail = await holdDetail(ctx, session.workspace.id, id).catch((error: unknown) => {
      if (error instanceof ServiceError) return null;
      throw error;
    });
    if (!detail) return null;
    const { hold } = detail;
    const [facts, fourEyes, followUps, delegated] = await Promise.all([
      submissionFacts(ctx, hold),
      fourEyesOf(ctx, hold, session.member),
      followUpLog(ctx, hold),
      delegatedFor(ctx, session.member, [hold]),
    ]);
    const delegation = delegated.get(hold.id) ?? null;
    const passkey = await passkeyPrompt(ctx, hold, session.member);
    return {
      title: hold.toolName,
      view: holdPanelView({ hold, facts, fourEyes, followUps, delegation, session, back, next, passkey }),
    };
  }

  app.get('/app/inbox', async (request, reply) => {
    const session = request.appSession!;
    const parsed = parseInboxUrl(request.query);
    if ('problem' in parsed) return problemPage(reply, 400, 'Not understood', parsed.problem, session);
    const { url } = parsed;
    const drawnAt = ctx.now();
    const page = await inboxPage(ctx, session.member, {
      filters: filtersOf(url),
      order: url.order ?? 'deadline',
      after: cursorOf(url.after),
      before: cursorOf(url.before),
    });
    const lines = page.lines;
    const delegated = await delegatedFor(ctx, session.member, lines);
    const chosen = url.hold ?? lines[0]?.id ?? null;
    const index = lines.findIndex((line) => line.id === chosen);
    // After a decision the next line is selected, or the one before when it was the last.
    const next = index < 0 ? null : ((lines[index + 1] ?? lines[index - 1] ?? null)?.id ?? null);
    const back = inboxHref(url, { hold: undefined });
    const panel = chosen === null ? null : await panelOf(session, chosen, back, next);
    const selection = url.hold && panel ? 'chosen' : panel ? 'default' : 'none';
    const lineHref = (id: string) => inboxHref(url, { hold: id });
    const body = html`<div class="desk" data-selection="${selection}" data-drawn-at="${drawnAt}">
        <section class="queue" aria-labelledby="queue-title">
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
          <p class="arrivals" role="status">
            <a href="${inboxHref(url, { after: undefined, before: undefined, hold: undefined })}" hidden></a>
          </p>
          ${when(page.capped, () => html`<p class="notice">More holds wait than the inbox lists at once: filter to see the rest.</p>`)}
          ${
            lines.length === 0
              ? html`<p class="empty card">
                  ${page.waiting === 0 ? 'Nothing waits for your decision.' : 'No waiting hold matches these filters.'}
                </p>`
              : html`<ol class="lines" aria-label="Holds waiting for you">
                  ${lines.map((line) => holdLineView(line, { href: lineHref(line.id), selected: line.id === chosen, forWhom: delegated.get(line.id)?.name }))}
                </ol>`
          }
          <nav class="pager" aria-label="Pages">
            ${when(page.previous, () => html`<a href="${inboxHref(url, { before: cursorText(page.previous!), after: undefined, hold: undefined })}" rel="prev">← Earlier</a>`)}
            ${when(page.next, () => html`<a href="${inboxHref(url, { after: cursorText(page.next!), before: undefined, hold: undefined })}" rel="next">Later →</a>`)}
          </nav>
        </section>
        <section class="detail" aria-label="Selected hold">
          ${when(selection === 'chosen', () => html`<p class="back-to-list"><a href="${back}">← All waiting holds</a></p>`)}
          ${panel?.view ?? html`<p class="empty card">Select a hold to see it in full.</p>`}
        </section>
      </div>
      ${keysDialog()}`;
    return sendPage(
      reply,
      layout(
        {
          title: 'Inbox',
          session,
          active: 'inbox',
          pending: page.waiting,
          notice: NOTICES[url.notice ?? ''],
        },
        body,
      ),
    );
  });

  // What changed since a page was drawn: the live updates of the inbox and of a hold's page.
  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/app/inbox/changes',
    async (request, reply) => {
      const session = request.appSession!;
      const { shown = '', since = '', ...rest } = request.query;
      const parsed = parseInboxUrl(rest);
      const ids = shown.split(',').filter((id) => HOLD_REFERENCE_PATTERN.test(id));
      if ('problem' in parsed || ids.length > 200 || !/^\d{1,16}$/.test(since)) {
        return reply.code(400).send({ error: 'not_understood' });
      }
      const changes = await inboxChanges(ctx, session.member, ids, filtersOf(parsed.url), Number(since));
      return reply.header('Cache-Control', 'no-store').send({
        waiting: changes.waiting,
        arrived: changes.arrived,
        left: changes.left.map((left) => ({ id: left.id, status: left.status, note: leftInWords(left) })),
        approvals: changes.approvals
          .filter((progress) => progress.required > 1)
          .map((progress) => ({ ...progress, names: progress.names.join(', ') })),
      });
    },
  );

  app.get<{ Params: { id: string } }>('/app/holds/:id', async (request, reply) => {
    const session = request.appSession!;
    const id = request.params.id;
    const back = `/app/holds/${id}`;
    const panel = HOLD_REFERENCE_PATTERN.test(id) ? await panelOf(session, id, back, null) : null;
    if (!panel) return problemPage(reply, 404, 'Not found', 'No such hold.', session);
    const notice = NOTICES[String((request.query as Record<string, unknown>).notice ?? '')];
    const body = html`<div class="hold-page" data-drawn-at="${ctx.now()}">
        <p><a href="/app/inbox">← Inbox</a></p>
        ${panel.view}
      </div>
      ${keysDialog()}`;
    return sendPage(
      reply,
      layout(
        { title: panel.title, session, active: 'inbox', pending: await pendingOf(session), notice },
        body,
      ),
    );
  });

  app.get<{ Params: { id: string } }>('/app/holds/:id/arguments.json', async (request, reply) => {
    const session = request.appSession!;
    const id = request.params.id;
    const detail = HOLD_REFERENCE_PATTERN.test(id)
      ? await holdDetail(ctx, session.workspace.id, id).catch((error: unknown) => {
          if (error instanceof ServiceError) return null;
          throw error;
        })
      : null;
    if (!detail) return problemPage(reply, 404, 'Not found', 'No such hold.', session);
    return reply
      .type('application/json; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="${detail.hold.id}-arguments.json"`)
      .header('Cache-Control', 'no-store')
      .header('X-Content-Type-Options', 'nosniff')
      .send(JSON.stringify(detail.hold.arguments, null, 2));
  });

  app.post<{ Params: { id: string }; Body: Form }>('/app/holds/:id/decide', async (request, reply) => {
    const session = request.appSession!;
    const form = DecideForm.safeParse({
      verdict: field(request.body, 'verdict'),
      comment: field(request.body, 'comment'),
      back: field(request.body, 'back'),
      next: field(request.body, 'next'),
    });
    if (!HOLD_REFERENCE_PATTERN.test(request.params.id) || !form.success) {
      return problemWithCount(reply, session, 400, 'Not understood', 'Choose approve or reject.');
    }
    if (session.member.role === 'viewer')
      return problemWithCount(reply, session, 403, 'Not allowed', 'Viewers do not decide.');
    const { verdict, comment, back, next } = form.data;
    // The page offered no Approve for a hold it cannot show whole; a form sent anyway is refused.
    if (verdict === 'approve') {
      const shown = await getHold(ctx, session.workspace.id, request.params.id).catch((error: unknown) => {
        if (error instanceof ServiceError) return null;
        throw error;
      });
      if (shown && !holdArguments(shown).complete)
        return problemWithCount(reply, session, 422, 'Not decided', TOO_LARGE_TO_APPROVE);
    }
    let result;
    try {
      result = await decideHold(ctx, {
        workspaceId: session.workspace.id,
        holdId: request.params.id,
        memberId: session.member.id,
        verdict,
        comment,
        channel: 'inbox',
        passkey: field(request.body, 'passkey') || null,
      });
    } catch (error) {
      if (error instanceof ServiceError)
        return problemWithCount(
          reply,
          session,
          error.code === 'not_found' ? 404 : 422,
          'Not decided',
          error.message,
        );
      throw error;
    }
    if (result.outcome === 'not_an_approver' || result.outcome === 'own_request')
      return problemWithCount(
        reply,
        session,
        403,
        'Not decided',
        result.outcome === 'own_request'
          ? blockerInWords('own_request', result.hold)
          : 'You are not among the approvers of this hold.',
      );
    // Back where the decision was made, with what became of it; a hold decided meanwhile stays selected.
    const decided = result.outcome === 'closed' || result.outcome === 'already_decided';
    const notice = decided
      ? result.outcome
      : result.hold.status === 'pending'
        ? 'recorded'
        : result.hold.status;
    const select = decided ? request.params.id : next;
    return reply.redirect(
      withQuery(back, { notice, hold: back.startsWith('/app/inbox') ? select : null }),
      303,
    );
  });

  /** A problem page whose header still counts what waits for the member. */
  async function problemWithCount(
    reply: FastifyReply,
    session: AppSession,
    status: number,
    title: string,
    message: string,
  ) {
    return sendPage(
      reply,
      layout(
        { title, session, pending: await pendingOf(session) },
        html`<div class="narrow card">
          <h1>${title}</h1>
          <p>${message}</p>
          <p><a href="/app/inbox">Back to the inbox</a></p>
        </div>`,
      ),
      status,
    );
  }

  // Live updates: one event per change to the workspace's holds; the page refetches itself.
  app.get('/app/events', async (request, reply) => {
    const session = request.appSession!;
    reply.hijack();
    const stream = reply.raw;
    stream.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    stream.write('retry: 3000\n\n');
    let pending: NodeJS.Timeout | undefined;
    let ended = false;
    const heartbeat = setInterval(() => stream.write(': ping\n\n'), 25_000);
    const stop = ctx.holdEvents.watch(session.workspace.id, (event) => {
      // A stream opened while the service stops hears `closed` inside `watch` itself, before `stop`
      // is set: ending it a tick later still ends it, or it would hold the server's shutdown forever.
      if (event === 'closed') return queueMicrotask(end);
      // Bursts of changes become one event.
      pending ??= setTimeout(() => {
        pending = undefined;
        stream.write('event: holds\ndata: changed\n\n');
      }, 100);
    });
    function end() {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      clearTimeout(pending);
      stop();
      stream.end();
    }
    request.raw.on('close', end);
  });
}
