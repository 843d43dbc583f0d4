/**
 * A tool's classification, set from the rules page (`POST /app/admin/tools`): the tool is named in the
 * form, since it may not have been called yet. Allowing a new tool asks first, and may approve the calls
 * of it that wait.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { approveWaitingHolds, waitingHoldsOfTool } from '../../../services/classify-tool.ts';
import type { ServiceContext } from '../../../services/context.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice } from '../../flash.ts';
import type { Html } from '../../html.ts';
import { field, type Form, sendPage } from '../../respond.ts';
import { confirmAllow } from '../../views/rules/tools.ts';
import { adminPage, applyChange, readAtOf } from './shared.ts';

const CLASSIFICATIONS = ['allow', 'approval', 'deny'] as const;
const LABELS: Record<string, string> = { 'tools.0.connection': 'Connection', 'tools.0.tool': 'Tool name' };

/** The rules page with the problems that stopped a change, as the rules area renders it. */
export type ProblemsPage = (session: AppSession, problems: string[]) => Promise<Html>;

export async function classifyTool(
  ctx: ServiceContext,
  request: FastifyRequest<{ Body: Form }>,
  reply: FastifyReply,
  refused: ProblemsPage,
) {
  const session = request.appSession!;
  const [connection, tool] = [field(request.body, 'connection'), field(request.body, 'tool')];
  const classification = CLASSIFICATIONS.find((known) => known === field(request.body, 'classification'));
  if (!classification)
    return sendPage(reply, await refused(session, ['Choose allow, approval or deny.']), 422);
  const named = { connection, name: tool };
  // Allowing a new tool lets its next calls through unseen: ask once, and offer its waiting calls.
  if (classification === 'allow' && field(request.body, 'confirmed') !== 'yes') {
    const { isNew, waiting } = await waitingHoldsOfTool(ctx, session.workspace.id, named);
    const body = confirmAllow(session, named, waiting, readAtOf(request.body));
    const page = { title: `Allow ${tool}?`, active: 'rules' };
    if (isNew) return sendPage(reply, await adminPage(ctx, session, page, body));
  }
  const issues = await applyChange(ctx, session, readAtOf(request.body), () => ({
    tools: [{ connection, tool, classification }],
  }));
  if (issues) {
    const problems = issues.map((issue) => `${LABELS[issue.field] ?? issue.field}: ${issue.message}`);
    return sendPage(reply, await refused(session, problems), 422);
  }
  if (classification !== 'allow' || field(request.body, 'approve_waiting') !== 'yes')
    return redirectWithNotice(reply, '/app/admin/rules', 'classified');
  const counts = await approveWaitingHolds(ctx, {
    workspaceId: session.workspace.id,
    memberId: session.member.id,
    tool: named,
  });
  const notice = `classified:${counts.approved}:${counts.awaitingOthers}:${counts.left}`;
  return redirectWithNotice(reply, '/app/admin/rules', notice);
}
