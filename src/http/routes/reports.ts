/** GET /api/v1/reports/oversight and /activity, as CSV (streamed) or PDF. */
import { reportQuerySchema } from '../../services/reports.ts';
import { type ReportKind, sendReport } from '../../web/report-download.ts';
import { COMMON_ERRORS, defineRoute, docsUrl } from '../route-table.ts';

const SUMMARIES: Record<ReportKind, string> = {
  oversight:
    'How holds were decided in a period: outcomes, rule against people, channels, times, expiries, four-eyes, per tool and approver',
  activity:
    'One row per hold of a period: reference, times, tool, agent, status, decision, approvers, execution',
};

const report = (kind: ReportKind) =>
  defineRoute({
    method: 'GET',
    url: `/api/v1/reports/${kind}`,
    bucket: 'v1-reports',
    operationId: `${kind}Report`,
    tags: ['Reports'],
    summary: SUMMARIES[kind],
    description:
      'CSV (RFC 4180, UTF-8, streamed; formula-like cells prefixed with an apostrophe) or PDF. `format` wins over `Accept`. The report names the evidence chain head it was built from.',
    query: reportQuerySchema,
    answers: {
      200: {
        description: 'The report, as an attachment.',
        media: {
          'text/csv': { schema: { type: 'string' } },
          'application/pdf': { schema: { type: 'string', format: 'binary' } },
        },
      },
      422: 'ValidationFailed',
      ...COMMON_ERRORS,
    },
    // sendReport reads the query again: the app's downloads share it.
    handler: async ({ request, reply }, { ctx }) =>
      sendReport(ctx, request, reply, request.caller!.workspace, kind, docsUrl(ctx)),
  });

export const reportRoutes = [report('oversight'), report('activity')];
