/** Many holds at once, through the submission service (the API's 120 a minute would take hours). */
import { type HoldRequest, submitHold } from '../../src/services/submit-hold.ts';
import type { ServiceContext } from '../../src/services/context.ts';
import type { Workspace } from '../../src/store/workspaces.ts';

/** Submits `count` holds made by `make(i)`, in order; returns their ids. */
export async function seedHolds(
  ctx: ServiceContext,
  workspace: Workspace,
  count: number,
  make: (i: number) => Partial<HoldRequest> & Pick<HoldRequest, 'toolName'>,
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { body } = await submitHold(
      ctx,
      {
        workspace,
        environment: 'live',
        requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
      },
      {
        connection: 'SDK',
        arguments: {},
        agent: { id: 'billing-bot', label: 'Billing bot' },
        context: {},
        idempotencyKey: `seed-${i}-${Math.random().toString(36).slice(2)}`,
        ...make(i),
      },
    );
    ids.push(body.id);
  }
  return ids;
}
