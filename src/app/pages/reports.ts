/** The Reports page: pick a period (and a tool or an agent), download oversight or activity as PDF or CSV. */
import type { FastifyInstance } from 'fastify';
import { fieldIssues } from '../../web/errors.ts';
import { reportQuerySchema } from '../../services/reports.ts';
import { type ReportKind, sendReport } from '../../web/report-download.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';

type Query = Record<string, string | undefined>;

export function reportPages(app: FastifyInstance, { ctx }: PageDeps) {
  const page = async (session: AppSession, query: Query, problems: { field: string; message: string }[]) => {
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const from = query.from ?? day(ctx.now() - 30 * 86_400_000);
    const to = query.to ?? day(ctx.now() + 86_400_000);
    const body = html`<h1>Reports</h1>
      <p>
        <strong>Oversight</strong>: how holds were decided in the period: outcomes, rules against people,
        channels, time to decision, expiries, four-eyes, per tool and per approver. <strong>Activity</strong>:
        one line per hold. Both name the evidence chain head they were built from.
      </p>
      ${
        problems.length > 0
          ? html`<div class="error" role="alert">
              <p>The report could not be made:</p>
              <ul>
                ${problems.map((p) => html`<li>${p.field}: ${p.message}</li>`)}
              </ul>
            </div>`
          : null
      }
      <form method="get" action="/app/reports/oversight" class="card filters">
        <div>
          <label for="r-from">From</label
          ><input id="r-from" name="from" type="date" value="${from}" required />
        </div>
        <div>
          <label for="r-to">To (not included)</label
          ><input id="r-to" name="to" type="date" value="${to}" required />
        </div>
        <div>
          <label for="r-tool">Tool (optional)</label
          ><input id="r-tool" name="tool" type="text" value="${query.tool ?? ''}" />
        </div>
        <div>
          <label for="r-agent">Agent (optional)</label
          ><input id="r-agent" name="agent" type="text" value="${query.agent ?? ''}" />
        </div>
        <div class="buttons">
          <button type="submit" name="format" value="pdf">Oversight (PDF)</button>
          <button type="submit" name="format" value="csv">Oversight (CSV)</button>
          <button type="submit" name="format" value="pdf" formaction="/app/reports/activity">
            Activity (PDF)
          </button>
          <button type="submit" name="format" value="csv" formaction="/app/reports/activity">
            Activity (CSV)
          </button>
        </div>
      </form>
      <p class="muted">
        The same reports come from <code>GET /api/v1/reports/oversight</code> and <code>/activity</code> with
        an API key.
      </p>`;
    return layout(
      {
        title: 'Reports',
        session,
        active: 'reports',
        pending: (await waitingIdsOf(ctx, session.member)).length,
      },
      body,
    );
  };

  app.get('/app/reports', async (request, reply) => sendPage(reply, await page(request.appSession!, {}, [])));

  for (const kind of ['oversight', 'activity'] as ReportKind[]) {
    app.get<{ Querystring: Query }>(`/app/reports/${kind}`, async (request, reply) => {
      const session = request.appSession!;
      // Empty optional fields of the form mean "any".
      const query = Object.fromEntries(Object.entries(request.query).filter(([, value]) => value !== ''));
      const parsed = reportQuerySchema.safeParse(query);
      if (!parsed.success) return sendPage(reply, await page(session, query, fieldIssues(parsed.error)), 422);
      request.query = query;
      return sendReport(ctx, request, reply, session.workspace, kind, `${ctx.publicUrl}/docs/reports`);
    });
  }
}
