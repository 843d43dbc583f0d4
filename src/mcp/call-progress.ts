/**
 * The progress a tools/call's client hears, when it asked for progress (a progress token): the
 * upstream's own, and the proxy's after each silence, so that a client that resets its timeout on
 * progress (the SDK's `resetTimeoutOnProgress`; its default timeout is 60 s) waits for a long
 * upstream call instead of cancelling it.
 */
import type { ProgressToken } from '@modelcontextprotocol/server';

/** How long a call goes without progress before the proxy sends its own. Tests shorten it. */
export const silentCallProgress = { afterMs: 15_000 };

/** What the proxy's own progress adds to the last value sent: little, so the upstream's stay near theirs. */
const OWN_STEP = 0.001;

type Progress = { progress: number; total?: number; message?: string };

/**
 * `send` relays the upstream's progress; `stop` when the call ends. Each value must be greater than
 * the last (the spec's rule): one of the upstream's that is not (the proxy's own went past it) goes
 * out just above the last.
 */
export function callProgress(
  notify: (notification: { method: string; params: Record<string, unknown> }) => Promise<void>,
  progressToken: ProgressToken,
) {
  let last: number | undefined;
  let silence: NodeJS.Timeout | undefined;
  let stopped = false;
  const send = ({ progress, total, ...rest }: Progress) => {
    if (stopped) return;
    last = last !== undefined && progress <= last ? last + OWN_STEP : progress;
    // Past the upstream's total (the proxy's own steps went beyond it), the total is not said.
    const said = total !== undefined && last <= total ? { total } : {};
    void notify({
      method: 'notifications/progress',
      params: { progressToken, ...rest, ...said, progress: last },
    }).catch(() => undefined);
    waitForSilence();
  };
  const waitForSilence = () => {
    clearTimeout(silence);
    if (stopped) return;
    silence = setTimeout(
      () => send({ progress: (last ?? 0) + OWN_STEP, message: 'Still waiting for the upstream MCP server' }),
      silentCallProgress.afterMs,
    );
  };
  waitForSilence();
  return {
    send,
    stop: () => {
      stopped = true;
      clearTimeout(silence);
    },
  };
}
