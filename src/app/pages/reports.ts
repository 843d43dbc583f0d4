/** The Reports page: pick a period (and a tool or an agent), download oversight or activity as PDF or CSV. */
import type { FastifyInstance } from 'fastify';
import { fieldIssues } from '../../web/errors.ts';
import { reportQuerySchema } from '../../services/reports.ts';
import { type ReportKind, sendReport } from '../../web/report-download.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';
import { reportsView } from '../views/reports.ts';

type Query = Record<string, string | undefined>;

export function reportPages(app: FastifyInstance, { ctx }: PageDeps) {
  const page = async (session: AppSession, query: Query, problems: { field: string; message: string }[]) => {
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const from = query.from ?? day(ctx.now() - 30 * 86_400_000);
    const to = query.to ?? day(ctx.now() + 86_400_000);
    const body = reportsView(query, from, to, problems);
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
