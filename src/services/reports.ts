/**
 * The oversight and activity reports (decisions.md, Reports): figures counted by the database, rows
 * read page by page, and the signed chain head they were built from, so a report ties to the evidence.
 */
import { z } from 'zod';
import type { Checkpoint } from '../../packages/sdk/src/chain.ts';
import { checkpointOf, findChainHead } from '../store/evidence.ts';
import {
  type ActivityRow,
  activityPage,
  decisionsPerChannel,
  holdsCarry,
  decisionTotals,
  followUpTotals,
  outcomeCounts,
  perApprover,
  perTool,
  type ReportScope,
  timeToDecision,
  unclassifiedTools,
} from '../store/reports.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { instant, text } from './input.ts';

export type { ActivityRow } from '../store/reports.ts';

/** Query of GET /api/v1/reports/* (decisions.md, Reports); the period is completed by the route. */
export const reportQuerySchema = z
  .object({
    format: z.enum(['csv', 'pdf'], 'must be csv or pdf').optional().meta({
      description: 'csv (default) or pdf. Without it, an Accept of application/pdf or text/csv decides.',
    }),
    from: instant.optional().meta({
      description:
        'Start of the period (ISO 8601 date or date-time with offset), included. Default: 30 days before `to`.',
    }),
    to: instant
      .optional()
      .meta({ description: 'End of the period, excluded. Default: now. Must be after `from`.' }),
    tool: text(1, 200).optional().meta({ description: 'Only holds of this tool name.' }),
    agent: text(1, 200).optional().meta({ description: 'Only holds of this agent id.' }),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, {
    message: 'must be after from',
    path: ['to'],
  });

export interface ReportQuery {
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  tool?: string;
  agent?: string;
}

export const STATUSES = ['auto_allowed', 'pending', 'approved', 'rejected', 'expired', 'executed', 'failed'];

/** Upper bounds of the time-to-decision buckets, with their labels; the last bucket has no bound. */
export const DECISION_BUCKETS: [number, string][] = [
  [60_000, 'under 1 min'],
  [5 * 60_000, '1–5 min'],
  [15 * 60_000, '5–15 min'],
  [60 * 60_000, '15–60 min'],
  [4 * 3_600_000, '1–4 h'],
];
export const LAST_BUCKET = 'over 4 h';

/** What every report starts with: whose, which period, and the evidence it can be checked against. */
export interface ReportHeading {
  workspace: { id: string; name: string; slug: string; accentColor: string | null };
  period: { from: string; to: string };
  filters: { tool: string | null; agent: string | null };
  generatedAt: string;
  chainHead: Checkpoint | null;
}

export interface OversightReport extends ReportHeading {
  holds: number;
  outcomes: { status: string; holds: number }[];
  decidedBy: { rule: number; people: number; undecided: number };
  channels: { channel: string; decisions: number }[];
  timeToDecision: {
    decided: number;
    medianMs: number | null;
    p95Ms: number | null;
    histogram: { bucket: string; holds: number }[];
  };
  expiry: { waited: number; finished: number; expired: number; rate: number | null };
  fourEyes: { holds: number; approved: number; rejected: number; expired: number };
  /** Reminders sent, escalation steps taken and the holds they escalated, decisions made by delegates. */
  followUps: { reminders: number; escalations: number; holdsEscalated: number; delegatedDecisions: number };
  tools: Awaited<ReturnType<typeof perTool>>;
  approvers: Awaited<ReturnType<typeof perApprover>>;
  unclassified: Awaited<ReturnType<typeof unclassifiedTools>>;
}

const scopeOf = (workspace: Workspace, query: ReportQuery): ReportScope => ({
  workspaceId: workspace.id,
  ...query,
});

const UNKNOWN_FILTER = '(no hold has it)';

/**
 * A filter's value appears in the report only if a hold of the workspace has it: a report never
 * repeats what a request made up (decisions.md, Errors).
 */
async function shownFilter(
  ctx: ServiceContext,
  workspaceId: string,
  field: 'tool' | 'agent',
  value: string | undefined,
): Promise<string | null> {
  if (value === undefined) return null;
  return (await holdsCarry(ctx.db, workspaceId, field, value)) ? value : UNKNOWN_FILTER;
}

/** Read before the figures: everything the report counts is covered by this head or an earlier one. */
export async function reportHeading(
  ctx: ServiceContext,
  workspace: Workspace,
  query: ReportQuery,
): Promise<ReportHeading> {
  return {
    workspace: {
      id: workspace.id,
      name: workspace.name,
      slug: workspace.slug,
      accentColor: workspace.accentColor,
    },
    period: { from: new Date(query.from).toISOString(), to: new Date(query.to).toISOString() },
    filters: {
      tool: await shownFilter(ctx, workspace.id, 'tool', query.tool),
      agent: await shownFilter(ctx, workspace.id, 'agent', query.agent),
    },
    generatedAt: new Date(ctx.now()).toISOString(),
    chainHead: checkpointOf(await findChainHead(ctx.db, workspace.id)),
  };
}

export async function oversightReport(
  ctx: ServiceContext,
  workspace: Workspace,
  query: ReportQuery,
): Promise<OversightReport> {
  const heading = await reportHeading(ctx, workspace, query);
  const scope = scopeOf(workspace, query);
  const [outcomes, totals, followUps, channels, times, tools, approvers, unclassified] = await Promise.all([
    outcomeCounts(ctx.db, scope),
    decisionTotals(ctx.db, scope),
    followUpTotals(ctx.db, scope),
    decisionsPerChannel(ctx.db, scope),
    timeToDecision(
      ctx.db,
      scope,
      DECISION_BUCKETS.map(([limit]) => limit),
    ),
    perTool(ctx.db, scope),
    perApprover(ctx.db, scope),
    unclassifiedTools(ctx.db, scope),
  ]);
  const t = (name: keyof typeof totals) => totals[name];
  return {
    ...heading,
    holds: t('holds'),
    outcomes: STATUSES.map((status) => ({ status, holds: outcomes.get(status) ?? 0 })),
    decidedBy: {
      rule: t('by_rule'),
      people: t('by_people'),
      undecided: t('holds') - t('by_rule') - t('by_people'),
    },
    channels,
    timeToDecision: {
      decided: times.decided,
      medianMs: times.medianMs,
      p95Ms: times.p95Ms,
      histogram: times.histogram.map((holds, index) => ({
        bucket: DECISION_BUCKETS[index]?.[1] ?? LAST_BUCKET,
        holds,
      })),
    },
    expiry: {
      waited: t('waited'),
      finished: t('waited_closed'),
      expired: t('expired'),
      rate: t('waited_closed') === 0 ? null : t('expired') / t('waited_closed'),
    },
    fourEyes: {
      holds: t('four_eyes'),
      approved: t('four_eyes_approved'),
      rejected: t('four_eyes_rejected'),
      expired: t('four_eyes_expired'),
    },
    followUps: {
      ...followUps,
      // Every decision has its member among the approvers: their sum is the whole.
      delegatedDecisions: approvers.reduce((sum, a) => sum + a.asDelegate, 0),
    },
    tools,
    approvers,
    unclassified,
  };
}

const PAGE = 1000;

/** The scope's holds in order of submission, a page at a time, so memory stays flat. */
export async function* activityRows(
  ctx: ServiceContext,
  workspace: Workspace,
  query: ReportQuery,
): AsyncGenerator<ActivityRow[]> {
  const scope = scopeOf(workspace, query);
  let after: { createdAt: number; id: string } | null = null;
  for (;;) {
    const page = await activityPage(ctx.db, scope, after, PAGE);
    if (page.length > 0) yield page;
    // SQLite answers synchronously: without a turn of the event loop per page, a long report would
    // hold every other request (a /wait, a submission) until it is done.
    await new Promise((resolve) => setImmediate(resolve));
    if (page.length < PAGE) return;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}
