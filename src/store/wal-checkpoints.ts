/**
 * SQLite's checkpoints off the request path. A checkpoint copies the write-ahead log into the database
 * and syncs both; SQLite runs one inside a commit once the log has grown by 1,000 pages, which holds
 * the event loop for its syncs (about 8 ms here, a seventh of a load run). Here the connection commits
 * without them (`wal_autocheckpoint = 0`) and a worker thread's connection runs a PASSIVE checkpoint
 * every `CHECKPOINT_EVERY_MS` while there are commits: it never waits for the writer, and the writer
 * starts the log over from its beginning at its next commit once all of it is in the database.
 *
 * A passive checkpoint beside a steady writer may never catch up (new frames come while it copies),
 * and the log would grow without end. So once the log file passes `LOG_LIMIT_BYTES`, new transactions
 * wait (the event loop does not) until a checkpoint has copied all of it; the next commit then starts
 * the log over, and cuts the file back to the limit (`journal_size_limit`, which the connection sets):
 * the file is larger than the limit only while the log is. Should the worker stop, the connection
 * checkpoints as SQLite would.
 */
import { statSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';

export const CHECKPOINT_EVERY_MS = 200;
/** Four times SQLite's own threshold of 1,000 pages of 4 KiB. */
export const LOG_LIMIT_BYTES = 16_000_000;

export interface WalCheckpoints {
  /** Call after a commit: a checkpoint is due within `CHECKPOINT_EVERY_MS`, at once if the log is full. */
  written(): void;
  /** Resolves at once, or, while the log is past its limit, once a checkpoint has caught up with it. */
  room(): Promise<void>;
  close(): Promise<void>;
}

export function walCheckpoints(db: DatabaseSync, file: string): WalCheckpoints {
  db.exec(`PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = ${LOG_LIMIT_BYTES}`);
  /** Should the worker stop: SQLite's own checkpoints again. */
  const fallBack = () => {
    if (db.isOpen) db.exec('PRAGMA wal_autocheckpoint = 1000');
  };
  // Started at the first checkpoint due: a database written for less than that never needs one.
  let worker: Worker | null = null;
  let stopped = false;
  let asked = false;
  let due: NodeJS.Timeout | null = null;
  /** Set while the log is past its limit: the transactions that wait for a checkpoint to catch up. */
  let full: { promise: Promise<void>; resolve: () => void } | null = null;

  const release = () => {
    full?.resolve();
    full = null;
  };
  const stop = () => {
    if (stopped) return;
    stopped = true;
    worker = null;
    if (due) clearTimeout(due);
    release();
    fallBack();
  };
  const ask = () => {
    if (stopped || asked) return;
    if (!worker) {
      worker = new Worker(new URL('./wal-checkpoint-worker.ts', import.meta.url), { workerData: { file } });
      worker.on('message', (caughtUp: boolean) => {
        asked = false;
        // Closing keeps it referenced until it exits: `close` waits for that, and may be all that is left.
        if (!stopped) worker?.unref();
        if (caughtUp) release();
        // Writes wait meanwhile, so the next checkpoint catches up.
        else if (full) ask();
      });
      worker.on('error', stop);
      worker.on('exit', stop);
    }
    // Kept alive while it checkpoints: transactions may be waiting for it.
    worker.ref();
    asked = true;
    worker.postMessage('checkpoint');
  };

  return {
    written() {
      if (stopped) return;
      if ((statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0) > LOG_LIMIT_BYTES) {
        full ??= Promise.withResolvers<void>();
        ask();
      }
      if (due) return;
      due = setTimeout(() => {
        due = null;
        ask();
      }, CHECKPOINT_EVERY_MS);
      due.unref();
    },
    room: () => full?.promise ?? Promise.resolve(),
    async close() {
      if (due) clearTimeout(due);
      stopped = true;
      release();
      const running = worker;
      if (!running) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.ref();
      running.postMessage('close');
      await exited;
    },
  };
}
