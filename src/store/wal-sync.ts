/**
 * SQLite's write-ahead log synced to disk off the event loop. The connection commits with
 * `synchronous = NORMAL`: a commit's frames reach the log file (the operating system has them, so a
 * killed process loses nothing) but are not synced. A write is answered only once a sync of the log
 * that began after its commit has finished: what FULL guarantees, with the sync in libuv's thread
 * pool instead of the event loop, and every commit made meanwhile covered by the next one. SQLite
 * itself syncs the log before a checkpoint copies it into the database, and the database after.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { StorageUnavailableError } from './db.ts';

export interface WalSync {
  /** Call right after a commit, on the connection's turn; resolves once that commit is on disk. */
  committed(): Promise<void>;
  /** Waits for the syncs under way and lets go of the log. */
  close(): Promise<void>;
}

export function walSync(logFile: string): WalSync {
  /** Commits made so far, and how many of them a finished sync covers. */
  let commits = 0;
  let synced = 0;
  let waiting: { upTo: number; resolve: () => void; reject: (error: unknown) => void }[] = [];
  let syncing: Promise<void> | null = null;
  // Opened at the first sync and kept: SQLite keeps the same log file while a connection is open
  // (it removes it when the last one closes, and truncates it in place otherwise).
  let handle: FileHandle | null = null;

  async function syncAll() {
    while (waiting.length > 0) {
      // Every commit made before this sync starts is in the file, so this sync covers it.
      const upTo = commits;
      try {
        handle ??= await open(logFile, 'r');
        await handle.datasync();
      } catch (error) {
        const failed = waiting;
        waiting = [];
        // Nothing is known about the pages that failed: the next sync starts from a fresh handle.
        await handle?.close().catch(() => undefined);
        handle = null;
        for (const commit of failed) commit.reject(new StorageUnavailableError(error));
        continue;
      }
      synced = upTo;
      const done = waiting.filter((commit) => commit.upTo <= synced);
      waiting = waiting.filter((commit) => commit.upTo > synced);
      for (const commit of done) commit.resolve();
    }
    syncing = null;
  }

  return {
    committed() {
      const upTo = (commits += 1);
      return new Promise<void>((resolve, reject) => {
        waiting.push({ upTo, resolve, reject });
        syncing ??= syncAll();
      });
    },
    async close() {
      await syncing;
      await handle?.close();
      handle = null;
    },
  };
}
