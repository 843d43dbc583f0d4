/**
 * The public status page /a/<reference>: status, times and the workspace's branding, never tool,
 * arguments or agent. Unknown and malformed references get the very same 404 page.
 */
import type { FastifyReply } from 'fastify';
import { outcomeText } from '../../domain/outcome-text.ts';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import { utcText } from '../../domain/time-text.ts';
import { getPublicStatus } from '../../services/read-hold.ts';
import { limitAnonymous } from '../../web/guard.ts';
import { escapeHtml } from '../../markup/html.ts';
import { PAGE_SECURITY_HEADERS, page } from '../html.ts';
import { defineRoute } from '../route-table.ts';
import { statusPageParamsSchema } from '../schemas.ts';

/** In UTC, saying so: the page has no script and does not know its reader's zone. */
const when = (ms: number | null) =>
  ms === null ? '' : `<time datetime="${new Date(ms).toISOString()}">${utcText(ms)}</time>`;

function notFoundPage(reply: FastifyReply) {
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .send(page('Not found', '<h1>Not found</h1><p>There is no action with this reference.</p>'));
}

const HTML = { 'text/html': { schema: { type: 'string' } } };

const statusPage = defineRoute({
  method: 'GET',
  url: '/a/:reference',
  operationId: 'statusPage',
  tags: ['Public'],
  summary: 'Public status page of a hold (HTML)',
  description:
    'Shows the status, the reference, when it was requested, decided, and its deadline (pending or expired), with the workspace name and branding, and whether the workspace is frozen (never why). Never the tool, arguments or agent. Limited to 20 requests per minute per client IP. Unknown and malformed references get the same 404 page.',
  params: statusPageParamsSchema,
  answers: {
    200: {
      description:
        'The status page. Sent with `Cache-Control: no-store` and a strict Content-Security-Policy.',
      media: HTML,
    },
    404: { description: 'No hold with this reference (HTML page).', media: HTML },
    429: 'RateLimited',
    500: 'Internal',
    503: 'Unavailable',
  },
  handler: async ({ params, request, reply }, { ctx, counter }) => {
    reply.headers({ ...PAGE_SECURITY_HEADERS, 'Cache-Control': 'no-store' });
    if (!(await limitAnonymous(counter, ctx, request, reply))) return reply;
    const { reference } = params;
    const status = HOLD_REFERENCE_PATTERN.test(reference) ? await getPublicStatus(ctx, reference) : undefined;
    if (!status) return notFoundPage(reply);
    const { hold, workspace } = status;
    const logo = workspace.logoUrl ? `<img src="${escapeHtml(workspace.logoUrl)}" alt="">` : '';
    const rows = [
      ['Status', `<span class="status ${escapeHtml(hold.status)}">${escapeHtml(outcomeText(hold))}</span>`],
      ['Reference', `<code>${escapeHtml(hold.id)}</code>`],
      ['Requested', when(hold.createdAt)],
      hold.decidedAt !== null ? ['Decided', when(hold.decidedAt)] : null,
      hold.status === 'pending' || hold.status === 'expired' ? ['Deadline', when(hold.expiresAt)] : null,
    ].filter((row): row is string[] => row !== null);
    // Whether it is frozen, never why: the admin's reason is for the workspace, not the public.
    const frozen =
      workspace.frozenAt === null
        ? ''
        : '<p role="alert">This workspace is frozen: no action of it is carried out until an admin unfreezes it.</p>';
    const body = `<header>${logo}<span>${escapeHtml(workspace.name)}</span></header>
<h1>Action status</h1>${frozen}
<dl>${rows.map(([label, value]) => `<dt>${label}</dt><dd>${value}</dd>`).join('')}</dl>`;
    return reply
      .type('text/html; charset=utf-8')
      .send(page(`Action ${outcomeText(hold)}`, body, workspace.accentColor ?? undefined));
  },
});

export const statusPageRoutes = [statusPage];
