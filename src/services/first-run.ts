/** First run: with no workspace yet, the app creates the first one with its admin and signs them in. */
import { findMemberByEmail } from '../store/members.ts';
import { countWorkspaces } from '../store/workspaces.ts';
import { applyConfig } from './apply-config.ts';
import type { ParsedConfig } from './config-file.ts';
import type { ServiceContext } from './context.ts';
import { z } from 'zod';
import { invalid } from './errors.ts';
import { startSession } from './sign-in.ts';
import { createWorkspace } from './workspaces.ts';

export const hasWorkspaces = async (ctx: ServiceContext) => (await countWorkspaces(ctx.db)) > 0;

export async function createFirstWorkspace(
  ctx: ServiceContext,
  input: { slug: string; name: string; adminEmail: string; adminName: string },
): Promise<{ sessionId: string }> {
  if (!z.email().safeParse(input.adminEmail).success)
    throw invalid('admin_email', 'must be an e-mail address');
  if (input.adminName.trim() === '') throw invalid('admin_name', 'must not be empty');
  const workspace = await createWorkspace(ctx, { slug: input.slug, name: input.name }, { onlyIfFirst: true });
  const members: ParsedConfig = {
    config: { members: [{ email: input.adminEmail, name: input.adminName, role: 'admin' }] },
    lineOf: () => undefined,
  };
  await applyConfig(ctx, workspace, members);
  const admin = (await findMemberByEmail(ctx.db, workspace.id, input.adminEmail))!;
  return { sessionId: await ctx.db.transaction((tx) => startSession(tx, ctx, admin, 'setup')) };
}
