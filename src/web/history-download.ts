/** The History page's CSV as a download: streamed, every matching hold, however many. */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { historyCsv } from '../reports/history-csv.ts';
import type { ServiceContext } from '../services/context.ts';
import { historyBatches, type HistoryFilters } from '../services/history.ts';
import type { Workspace } from '../store/workspaces.ts';

export function sendHistoryCsv(
  ctx: ServiceContext,
  reply: FastifyReply,
  workspace: Workspace,
  filters: HistoryFilters,
) {
  const day = new Date(ctx.now()).toISOString().slice(0, 10);
  return reply
    .header('Content-Disposition', `attachment; filename="history-${workspace.slug}-${day}.csv"`)
    .header('Cache-Control', 'no-store')
    .type('text/csv; charset=utf-8')
    .send(Readable.from(historyCsv(historyBatches(ctx, workspace.id, filters))));
}
