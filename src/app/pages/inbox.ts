/** The inbox (holds waiting for me), one hold in full, the decision form, history, live events, evidence and its export. */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Hold } from '../../domain/hold.ts';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import { decideHold } from '../../services/decide-hold.ts';
import { ServiceError } from '../../services/errors.ts';
import { historyOf, holdDetail, inboxOf, waitingIdsOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { newestCheckpoint } from '../../services/publish-checkpoints.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { exportEvidence } from '../../services/export-evidence.ts';
import { type Html, html, time, when } from '../html.ts';
import { holdFacts } from '../hold-view.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../plugin.ts';

const STATUSES = ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'];

const status = (hold: Hold) =>
  html`<span class="status ${hold.status}">${hold.status.replace('_', ' ')}</span>`;

const progress = (hold: Hold) =>
  hold.approvalsRequired > 1
    ? html`<span class="progress">${hold.approvalsReceived} of ${hold.approvalsRequired} approvals</span>`
    : null;

function decisionForm(hold: Hold, session: AppSession, canDecide: boolean): Html | null {
  if (hold.status !== 'pending' || !canDecide || session.member.role === 'viewer') return null;
  return html`<form method="post" action="/app/holds/${hold.id}/decide" class="decide">
    <input type="hidden" name="_csrf" value="${session.csrfToken}" />
    <label for="comment-${hold.id}">Comment (optional)</label>
    <textarea id="comment-${hold.id}" name="comment" maxlength="2000"></textarea>
    <div class="buttons">
      <button type="submit" name="verdict" value="approve" class="approve">Approve</button>
      <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
    </div>
  </form>`;
}

function holdCard(hold: Hold, session: AppSession, canDecide: boolean): Html {
  return html`<article class="card hold" id="hold-${hold.id}" aria-labelledby="title-${hold.id}">
    <header>
      <h2 id="title-${hold.id}"><a href="/app/holds/${hold.id}">${hold.toolName}</a></h2>
      <span>${status(hold)} ${progress(hold)}</span>
    </header>
    ${holdFacts(hold)} ${decisionForm(hold, session, canDecide)}
  </article>`;
}

export function inboxPages(app: FastifyInstance, { ctx }: PageDeps) {
  const page = async (
    session: AppSession,
    active: string,
    title: string,
    body: Html,
    notice?: string | null,
  ) =>
    layout(
      { title, session, active, notice, pending: (await waitingIdsOf(ctx, session.member)).length },
      body,
    );

  app.get<{ Querystring: { notice?: string } }>('/app/inbox', async (request, reply) => {
    const session = request.appSession!;
    const holds = await inboxOf(ctx, session.member);
    const body = html`<h1>Waiting for you <span class="badge">${holds.length}</span></h1>
      ${holds.length === 0 ? html`<p class="empty card">Nothing waits for your decision.</p>` : holds.map((hold) => holdCard(hold, session, true))}`;
    const notice = {
      approved: 'Approved.',
      rejected: 'Rejected.',
      recorded: 'Your approval is recorded; more are needed.',
    }[request.query.notice ?? ''];
    return sendPage(
      reply,
      layout({ title: 'Inbox', session, active: 'inbox', pending: holds.length, notice }, body),
    );
  });

  app.get<{ Params: { id: string } }>('/app/holds/:id', async (request, reply) => {
    const session = request.appSession!;
    if (!HOLD_REFERENCE_PATTERN.test(request.params.id))
      return problemPage(reply, 404, 'Not found', 'No such hold.', session);
    const detail = await holdDetail(ctx, session.workspace.id, request.params.id).catch((error: unknown) => {
      if (error instanceof ServiceError) return null;
      throw error;
    });
    if (!detail) return problemPage(reply, 404, 'Not found', 'No such hold.', session);
    const mine = (await waitingIdsOf(ctx, session.member)).includes(detail.hold.id);
    const body = html`<p><a href="/app/inbox">← Inbox</a></p>
      ${holdCard(detail.hold, session, mine)}
      <section class="card">
        <h2>Decisions</h2>
        ${
          detail.decisions.length === 0
            ? html`<p class="muted">None yet.</p>`
            : html`<table class="responsive">
                <thead>
                  <tr>
                    <th>Member</th>
                    <th>Verdict</th>
                    <th>Channel</th>
                    <th>When</th>
                    <th>Comment</th>
                  </tr>
                </thead>
                <tbody>
                  ${detail.decisions.map(
                    (d) =>
                      html`<tr>
                        <td>${d.name} <span class="muted">${d.email}</span></td>
                        <td>${d.verdict}</td>
                        <td>${d.channel}</td>
                        <td>${time(d.decidedAt)}</td>
                        <td>${d.comment ?? ''}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        ${when(detail.hold.decidedAt !== null, () => html`<p>Outcome: <strong>${detail.hold.verdict}</strong> via ${detail.hold.channel}${detail.hold.reason ? html` — ${detail.hold.reason}` : null}</p>`)}
        <p class="muted">Reference <code>${detail.hold.id}</code> · environment ${detail.hold.environment}</p>
      </section>`;
    return sendPage(reply, await page(session, 'inbox', detail.hold.toolName, body));
  });

  app.post<{ Params: { id: string }; Body: Form }>('/app/holds/:id/decide', async (request, reply) => {
    const session = request.appSession!;
    const verdict = field(request.body, 'verdict');
    if (!HOLD_REFERENCE_PATTERN.test(request.params.id) || (verdict !== 'approve' && verdict !== 'reject')) {
      return problemPage(reply, 400, 'Not understood', 'Choose approve or reject.', session);
    }
    if (session.member.role === 'viewer')
      return problemPage(reply, 403, 'Not allowed', 'Viewers do not decide.', session);
    let result;
    try {
      result = await decideHold(ctx, {
        workspaceId: session.workspace.id,
        holdId: request.params.id,
        memberId: session.member.id,
        verdict,
        comment: field(request.body, 'comment'),
        channel: 'inbox',
      });
    } catch (error) {
      if (error instanceof ServiceError)
        return problemPage(
          reply,
          error.code === 'not_found' ? 404 : 422,
          'Not decided',
          error.message,
          session,
        );
      throw error;
    }
    const messages: Record<string, [number, string]> = {
      not_an_approver: [403, 'You are not among the approvers of this hold.'],
      already_decided: [409, 'You have decided this hold already; each member counts once.'],
      closed: [409, `This hold is ${result.hold.status} already.`],
    };
    const problem = messages[result.outcome];
    if (problem) return problemPage(reply, problem[0], 'Not decided', problem[1], session);
    const notice = result.hold.status === 'pending' ? 'recorded' : result.hold.status;
    return reply.redirect(`/app/inbox?notice=${notice}`, 303);
  });

  app.get<{ Querystring: Record<string, string | undefined> }>('/app/history', async (request, reply) => {
    const session = request.appSession!;
    const q = request.query;
    const day = (value: string | undefined) =>
      value && /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : undefined;
    const to = day(q.to);
    const filters = {
      status: STATUSES.includes(q.status ?? '') ? q.status : undefined,
      tool: q.tool?.slice(0, 200) || undefined,
      agent: q.agent?.slice(0, 200) || undefined,
      from: day(q.from),
      to: to === undefined ? undefined : to + 86_400_000,
    };
    const before = q.before?.match(/^(\d+)_(svc_pa_[A-Za-z0-9_-]+)$/);
    const holds = await historyOf(
      ctx,
      session.workspace.id,
      filters,
      before ? { createdAt: Number(before[1]), id: before[2]! } : null,
      51,
    );
    const more = holds.length > 50 ? holds[49]! : null;
    const shown = holds.slice(0, 50);
    const keep = new URLSearchParams(
      Object.entries(q).filter(([k, v]) => k !== 'before' && v) as [string, string][],
    );
    const body = html`<h1>History</h1>
      <form method="get" action="/app/history" class="filters" role="search">
        <div>
          <label for="f-status">Status</label
          ><select id="f-status" name="status">
            <option value="">Any</option>
            ${STATUSES.map((s) => html`<option value="${s}" ${q.status === s ? html` selected` : null}>${s.replace('_', ' ')}</option>`)}
          </select>
        </div>
        <div>
          <label for="f-tool">Tool</label
          ><input id="f-tool" name="tool" type="text" value="${q.tool ?? ''}" />
        </div>
        <div>
          <label for="f-agent">Agent</label
          ><input id="f-agent" name="agent" type="text" value="${q.agent ?? ''}" />
        </div>
        <div>
          <label for="f-from">From</label
          ><input id="f-from" name="from" type="date" value="${q.from ?? ''}" />
        </div>
        <div><label for="f-to">To</label><input id="f-to" name="to" type="date" value="${q.to ?? ''}" /></div>
        <div><button type="submit">Filter</button></div>
      </form>
      ${
        shown.length === 0
          ? html`<p class="empty card">No holds match.</p>`
          : html`<table class="responsive">
              <thead>
                <tr>
                  <th>Requested</th>
                  <th>Tool</th>
                  <th>Agent</th>
                  <th>Status</th>
                  <th>Decided</th>
                </tr>
              </thead>
              <tbody>
                ${shown.map(
                  (h) =>
                    html`<tr>
                      <td>${time(h.createdAt)}</td>
                      <td>
                        <a href="/app/holds/${h.id}">${h.toolName}</a>
                        <span class="muted">${h.connection}</span>
                      </td>
                      <td>${h.agentLabel ?? h.agentId}</td>
                      <td>${status(h)}</td>
                      <td>${time(h.decidedAt)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      ${when(more, () => html`<p><a href="/app/history?${keep.toString()}${keep.size ? '&' : ''}before=${more!.createdAt}_${more!.id}">Older →</a></p>`)}`;
    return sendPage(reply, await page(session, 'history', 'History', body));
  });

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
    return sendPage(reply, await page(session, 'evidence', 'Evidence', body));
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
