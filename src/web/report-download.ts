/** A report as a download, CSV (streamed) or PDF: the Core API's reports and the app's downloads give the same file. */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { activityCsv, oversightCsv } from '../reports/csv.ts';
import { activityPdf } from '../reports/pdf/activity.ts';
import { oversightPdf } from '../reports/pdf/oversight.ts';
import type { ServiceContext } from '../services/context.ts';
import {
  activityRows,
  oversightReport,
  type ReportQuery,
  reportHeading,
  reportQuerySchema,
} from '../services/reports.ts';
import type { Workspace } from '../store/workspaces.ts';
import { fieldIssues, sendValidationError } from './errors.ts';

export type ReportKind = 'oversight' | 'activity';

const DEFAULT_PERIOD_MS = 30 * 86_400_000;

/** `format` wins; else an Accept of application/pdf or text/csv; else CSV. */
function formatOf(request: FastifyRequest, format: 'csv' | 'pdf' | undefined): 'csv' | 'pdf' {
  if (format) return format;
  const accept = request.headers.accept ?? '';
  const pdf = accept.indexOf('application/pdf');
  const csv = accept.indexOf('text/csv');
  return pdf !== -1 && (csv === -1 || pdf < csv) ? 'pdf' : 'csv';
}

/**
 * Answers a report request for `workspace`: 422 for bad parameters, else the report. Shared by the
 * Core API and the app, so both give the same file.
 */
export async function sendReport(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  workspace: Workspace,
  kind: ReportKind,
  docsUrl: string,
) {
  const parsed = reportQuerySchema.safeParse(request.query);
  if (!parsed.success) return sendValidationError(reply, docsUrl, fieldIssues(parsed.error));
  const { from, to, tool, agent } = parsed.data;
  const end = to ?? (from !== undefined ? Math.max(ctx.now(), from + 1) : ctx.now());
  const query: ReportQuery = { from: from ?? end - DEFAULT_PERIOD_MS, to: end, tool, agent };
  const format = formatOf(request, parsed.data.format);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const name = `${kind}-${workspace.slug}-${day(query.from)}-${day(query.to)}.${format}`;
  reply
    .header('Content-Disposition', `attachment; filename="${name}"`)
    .header('Cache-Control', 'no-store')
    .type(format === 'pdf' ? 'application/pdf' : 'text/csv; charset=utf-8');
  if (kind === 'oversight') {
    const report = await oversightReport(ctx, workspace, query);
    return reply.send(format === 'pdf' ? oversightPdf(report) : oversightCsv(report));
  }
  const heading = await reportHeading(ctx, workspace, query);
  const rows = activityRows(ctx, workspace, query);
  return reply.send(format === 'pdf' ? activityPdf(heading, rows) : Readable.from(activityCsv(rows)));
}
