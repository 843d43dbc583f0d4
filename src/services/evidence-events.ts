/** Webhook events about a workspace's evidence rather than a hold: `evidence.checkpoint`, `evidence.alert`. */
import { randomId } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import type { Statement } from '../store/statements.ts';
import { findWebhookEndpoint, insertWebhookEventStatement } from '../store/webhooks.ts';

/**
 * The outbox row of an event about the workspace's evidence, not a hold (`evidence.checkpoint`,
 * `evidence.alert`: the body's `id` is its own reference), when the workspace has a webhook.
 */
export async function evidenceEventStatements(
  tx: Sql,
  workspaceId: string,
  body: { id: string; event: string },
  now: number,
): Promise<Statement[]> {
  if (!(await findWebhookEndpoint(tx, workspaceId))) return [];
  return [
    insertWebhookEventStatement({
      id: randomId('msg_', 16),
      workspaceId,
      holdId: body.id,
      event: body.event,
      body: JSON.stringify(body),
      createdAt: now,
    }),
  ];
}
