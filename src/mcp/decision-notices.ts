/**
 * An agent that listens does not have to poll: when a call held in a 2025-era session is decided,
 * expires or is carried out, the session's standing stream (GET) hears it, wherever the change was
 * made (hold events reach every instance), as a log message of the proxy's own (`notifications/message`,
 * logger `approvals`, level `notice`) carrying the answer the call now has — the answer
 * `service_check_status` would give. A call made as a task (2025-11-25) is also told its task's status
 * (`notifications/tasks/status`, task-notices.ts).
 */
import type { ServiceContext } from '../services/context.ts';
import { taskOf } from '../services/held-call-tasks.ts';
import { heldCallNotice } from '../services/proxy-call.ts';
import { getHold } from '../services/read-hold.ts';
import type { McpRelay } from './relay.ts';
import { taskStatusNotice } from './task-notices.ts';

export const NOTICE_LOGGER = 'approvals';

/** Starts telling sessions; returns the stop. */
export function noticeDecisions(ctx: ServiceContext, relay: McpRelay, log: (error: unknown) => void) {
  /** The status each hold was last announced with here: a change is told once per status. */
  const told = new Map<string, string>();
  return ctx.holdEvents.watchAll((holdId, workspaceId) => {
    if (!holdId || !workspaceId || !relay.hasStreams) return;
    void heldCallNotice(ctx, workspaceId, holdId)
      .then(async (notice) => {
        if (!notice || told.get(holdId) === notice.status) return;
        const sent = relay.notifySession(notice.serverId, notice.mcpSession, {
          method: 'notifications/message',
          params: { level: 'notice', logger: NOTICE_LOGGER, data: notice.answer },
        });
        // An approved call is told again when it has run; after that nothing more happens to it.
        if (sent && notice.status === 'approved') told.set(holdId, notice.status);
        else if (sent) told.delete(holdId);
        const hold = sent && (await getHold(ctx, workspaceId, holdId));
        if (hold && hold.context.mcp_task === true)
          relay.notifySession(notice.serverId, notice.mcpSession, taskStatusNotice(taskOf(ctx, hold)));
      })
      .catch(log);
  });
}
