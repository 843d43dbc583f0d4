/** A worker's heartbeat: run `work`, wait `intervalMs` (or until kicked), repeat; never two at once. */
export function startLoop(work: () => Promise<void>, intervalMs: number) {
  let stopped = false;
  let kicked = false;
  let wake: (() => void) | undefined;
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, intervalMs);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const running = (async () => {
    while (!stopped) {
      kicked = false;
      await work();
      if (!kicked && !stopped) await pause();
    }
  })();
  return {
    /** Run again as soon as the current round is done. */
    kick() {
      kicked = true;
      wake?.();
    },
    async stop() {
      stopped = true;
      wake?.();
      await running;
    },
  };
}
