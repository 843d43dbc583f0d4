/**
 * The kill switch of the Core API (admin-scope keys only): freeze the key's workspace (every new hold
 * denied, no approved MCP call run) and unfreeze it, as `approvals workspace freeze|unfreeze` does.
 */
import { z } from 'zod';
import { MAX_FREEZE_REASON } from '../../domain/freeze.ts';
import { freezeWorkspace, unfreezeWorkspace } from '../../services/freeze.ts';
import type { Caller } from '../../services/api-keys.ts';
import { invalid } from '../../services/errors.ts';
import { BODY_ERRORS, COMMON_ERRORS, defineRoute } from '../route-table.ts';

const ADMIN = { bucket: 'v1', admin: true, tags: ['Workspace'] } as const;

const slugField = z.string().optional().meta({
  description:
    "The workspace's slug, when the caller wants to be sure which workspace it stops: 422 unless it is the key's.",
});

const freezeBodySchema = z.object({
  reason: z.string().trim().min(1).max(MAX_FREEZE_REASON).meta({
    description: 'Why: shown in every denial while frozen, in the evidence and the webhook event.',
  }),
  workspace: slugField,
});

const unfreezeBodySchema = z.object({ workspace: slugField });

const freezeStateSchema = z
  .object({
    workspace: z.string().meta({ description: "The workspace's slug." }),
    frozen: z.boolean(),
    frozen_at: z.string().nullable(),
    reason: z
      .string()
      .nullable()
      .meta({ description: 'The reason of the freeze in force; null when not frozen.' }),
    by: z.string().nullable().meta({ description: 'Who froze it; null when not frozen.' }),
    changed: z.boolean().meta({ description: 'False when it already was so: nothing was recorded.' }),
  })
  .meta({ id: 'FreezeState' });

const ANSWERS = {
  200: { description: 'The workspace as it is now.', schema: freezeStateSchema },
  ...BODY_ERRORS,
  403: 'Forbidden',
  422: 'ValidationFailed',
  ...COMMON_ERRORS,
} as const;

/** The key's workspace, if it is the one the body names; what evidence calls the caller. */
function callerOf(caller: Caller, slug: string | undefined) {
  if (slug !== undefined && slug !== caller.workspace.slug)
    throw invalid('workspace', "is not this API key's workspace");
  const { key } = caller;
  return { workspace: caller.workspace, by: `API key ${key.id}${key.name ? ` (${key.name})` : ''}` };
}

const freezeRoute = defineRoute({
  ...ADMIN,
  method: 'POST',
  url: '/api/v1/workspace/freeze',
  operationId: 'freezeWorkspace',
  summary: 'Freeze the workspace: stop every agent at once',
  description:
    'The kill switch. While frozen, every new hold (Core API and MCP proxy) is denied with `decision.reason` "The workspace is frozen: <reason>", approved MCP calls not yet run wait, and pending holds stay pending: they may be rejected, but every approval is refused until it is unfrozen. Evidenced as `workspace.frozen` and sent as a webhook event. Freezing a frozen workspace changes nothing (`changed: false`).',
  body: { required: true, schema: freezeBodySchema },
  answers: ANSWERS,
  handler: async ({ body, request, answer }, { ctx }) => {
    const { workspace, by } = callerOf(request.caller!, body.workspace);
    return answer(200, await freezeWorkspace(ctx, workspace, { reason: body.reason, by }));
  },
});

const unfreezeRoute = defineRoute({
  ...ADMIN,
  method: 'POST',
  url: '/api/v1/workspace/unfreeze',
  operationId: 'unfreezeWorkspace',
  summary: 'Unfreeze the workspace',
  description:
    'New holds are decided by the rules again, and the approved MCP calls that waited run now. Evidenced as `workspace.unfrozen` and sent as a webhook event.',
  body: { required: false, schema: unfreezeBodySchema },
  answers: ANSWERS,
  handler: async ({ body, request, answer }, { ctx }) => {
    const { workspace, by } = callerOf(request.caller!, body.workspace);
    return answer(200, await unfreezeWorkspace(ctx, workspace, { by }));
  },
});

export const workspaceFreezeRoutes = [freezeRoute, unfreezeRoute];
