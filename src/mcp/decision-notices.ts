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
import { heldCallNotice, mcpSessionOf, storedHold } from '../services/proxy-call.ts';
import type { McpRelay } from './relay.ts';
import { taskStatusNotice } from './task-notices.ts';

export const NOTICE_LOGGER = 'approvals';

/** Starts telling sessions; returns the stop. */
export function noticeDecisions(ctx: ServiceContext, relay: McpRelay, log: (error: unknown) => void) {
  /** What each hold was last announced with here (status, task status): a change is told once. */
  const told = new Map<string, string>();
  const taskTold = new Map<string, string>();
  const tell = async (holdId: string, workspaceId: string) => {
    const hold = await storedHold(ctx, workspaceId, holdId);
    const session = hold && mcpSessionOf(hold);
    if (!hold || !session) return;
    const notice = heldCallNotice(ctx, hold);
    if (notice && told.get(holdId) !== notice.status) {
      const sent = relay.notifySession(notice.serverId, notice.mcpSession, {
        method: 'notifications/message',
        params: { level: 'notice', logger: NOTICE_LOGGER, data: notice.answer },
      });
      // An approved call is told again when it has run; after that nothing more happens to it.
      if (sent && notice.status === 'approved') told.set(holdId, notice.status);
      else if (sent) told.delete(holdId);
    }
    // A call asked as a task, held or allowed, is told each status its task takes once decided or run
    // (while it waits, its task is still the `working` one its answer gave).
    if (hold.context.mcp_task !== true || hold.status === 'pending') return;
    const task = taskOf(ctx, hold);
    if (taskTold.get(holdId) === task.status) return;
    if (!relay.notifySession(session.serverId, session.mcpSession, taskStatusNotice(task))) return;
    if (task.status === 'working') taskTold.set(holdId, task.status);
    else taskTold.delete(holdId);
  };
  return ctx.holdEvents.watchAll((holdId, workspaceId) => {
    if (!holdId || !workspaceId || !relay.hasStreams) return;
    void tell(holdId, workspaceId).catch(log);
  });
}
