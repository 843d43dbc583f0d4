/**
 * SQLite's write-ahead log synced to disk off the event loop. The connection commits with
 * `synchronous = NORMAL`: a commit's frames reach the log file (the operating system has them, so a
 * killed process loses nothing) but are not synced. A write is answered only once a sync of the log
 * that began after its commit has finished, and a read only once every commit it could see is on
 * disk (but for lazy ones, which are visible before: their callers chose that): what FULL guarantees, with the sync in libuv's thread pool instead of the event loop, and
 * every commit made meanwhile covered by the next one. SQLite itself syncs the log before a checkpoint
 * copies it into the database, and the database after.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { StorageUnavailableError } from './db.ts';

export interface WalSync {
  /** Call right after a commit, on the connection's turn; resolves once that commit is on disk. */
  committed(): Promise<void>;
  /**
   * A commit nobody waits for, and readers need not wait for: the next sync covers it, one started
   * for it if none has within `LAZY_SYNC_MS` (so a commit that waits does not wait for its sync too).
   */
  committedLazily(): void;
  /** Resolves once every commit made so far that is not lazy is on disk (before a read is answered). */
  caughtUp(): Promise<void>;
  /**
   * Resolves when the sync under way, if any, is over: a commit made before then would wait for
   * the next sync anyway, so the transactions that come meanwhile can wait to commit together.
   */
  syncDone(): Promise<void>;
  /** Waits for the syncs under way and lets go of the log. */
  close(): Promise<void>;
  /** Syncs of the log completed so far. */
  readonly syncs: number;
}

/** How long a lazy commit may wait for another commit's sync to cover it. */
export const LAZY_SYNC_MS = 20;

export function walSync(logFile: string): WalSync {
  /** Commits made so far, the last of them that was not lazy, and how many a finished sync covers. */
  let commits = 0;
  let lastDurable = 0;
  let synced = 0;
  let waiting: { upTo: number; resolve: () => void; reject: (error: unknown) => void }[] = [];
  let syncing: Promise<void> | null = null;
  /** The sync to come for lazy commits, when no other has started since. */
  let lazySync: NodeJS.Timeout | null = null;
  let syncs = 0;
  /** The `fdatasync` under way. */
  let inFlight: Promise<void> | null = null;
  /**
   * A sync that failed is final: the kernel may have dropped the pages it could not write and will
   * not say so again, so a later sync that succeeds proves nothing about them. From then on every
   * read and write fails as unavailable (as PostgreSQL stops on a failed fsync: the requests are
   * answered 503 and logged with the cause); a restart recovers from what is on disk.
   */
  let failed: unknown = null;
  // Opened at the first sync and kept: SQLite keeps the same log file while a connection is open
  // (it removes it when the last one closes, and otherwise rewrites it in place).
  let handle: FileHandle | null = null;

  async function syncAll() {
    if (lazySync) clearTimeout(lazySync);
    lazySync = null;
    while (failed === null && synced < commits) {
      // Every commit made before this sync starts is in the file, so this sync covers it.
      const upTo = commits;
      try {
        handle ??= await open(logFile, 'r+');
        inFlight = handle.datasync();
        await inFlight;
        syncs += 1;
      } catch (error) {
        failed = error;
        break;
      } finally {
        inFlight = null;
      }
      synced = upTo;
      const done = waiting.filter((commit) => commit.upTo <= synced);
      waiting = waiting.filter((commit) => commit.upTo > synced);
      for (const commit of done) commit.resolve();
    }
    if (failed !== null) {
      for (const commit of waiting) commit.reject(new StorageUnavailableError(failed));
      waiting = [];
    }
    syncing = null;
  }

  const onDisk = (upTo: number) => {
    if (failed !== null) return Promise.reject(new StorageUnavailableError(failed));
    if (upTo <= synced) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      waiting.push({ upTo, resolve, reject });
      syncing ??= syncAll();
    });
  };

  return {
    committed: () => onDisk((lastDurable = commits += 1)),
    committedLazily() {
      commits += 1;
      if (syncing || lazySync) return;
      lazySync = setTimeout(() => {
        lazySync = null;
        syncing ??= syncAll();
      }, LAZY_SYNC_MS);
    },
    caughtUp: () => onDisk(lastDurable),
    syncDone: () =>
      (inFlight ?? Promise.resolve()).then(
        () => undefined,
        () => undefined,
      ),
    get syncs() {
      return syncs;
    },
    async close() {
      if (lazySync) syncing ??= syncAll();
      await syncing;
      await handle?.close();
      handle = null;
    },
  };
}
