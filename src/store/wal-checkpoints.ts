/**
 * SQLite's checkpoints on a thread of their own. A checkpoint copies the write-ahead log into the
 * database and syncs both; SQLite runs one inside a commit once the log has grown by 1,000 pages,
 * which stops the event loop for its syncs (a tenth of its time under a steady stream of writes).
 * Here the connection commits without them (`wal_autocheckpoint = 0`) and a worker's own connection
 * runs a PASSIVE checkpoint whenever the log has grown by as much: it never waits for the writer,
 * and the writer starts the log again from its beginning once all of it is in the database. Should
 * the worker stop, the connection checkpoints as SQLite would.
 */
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/** SQLite's own threshold: 1,000 pages of 4 KiB. */
const GROWTH_BYTES = 4_000_000;
/** How often the log's size is looked at while the connection writes. */
const LOOK_EVERY_MS = 200;

export interface WalCheckpoints {
  /** Call after a commit: the log may have grown. */
  written(): void;
  close(): Promise<void>;
}

export function walCheckpoints(file: string, fallBack: () => void): WalCheckpoints {
  const worker = new Worker(new URL('./wal-checkpoint-worker.ts', import.meta.url), { workerData: { file } });
  let running = true;
  const stopped = () => {
    if (!running) return;
    running = false;
    fallBack();
  };
  worker.on('error', stopped);
  worker.on('exit', stopped);
  worker.unref();
  /** The log's size when the last checkpoint was asked for, and whether a look is due. */
  let askedAt = 0;
  let look: NodeJS.Timeout | null = null;
  const size = () => {
    try {
      return statSync(`${file}-wal`).size;
    } catch {
      return 0;
    }
  };
  return {
    written() {
      if (!running || look) return;
      look = setTimeout(() => {
        look = null;
        const now = size();
        // The writer started the log over (it was all checkpointed): count from there.
        if (now < askedAt) askedAt = 0;
        if (now - askedAt < GROWTH_BYTES) return;
        askedAt = now;
        worker.postMessage('checkpoint');
      }, LOOK_EVERY_MS);
      look.unref();
    },
    async close() {
      if (look) clearTimeout(look);
      running = false;
      await worker.terminate();
    },
  };
}
