/** The thread of `wal-checkpoints.ts`: one connection of its own, a PASSIVE checkpoint when asked. */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const db = new DatabaseSync((workerData as { file: string }).file);
db.exec('PRAGMA busy_timeout = 5000');
parentPort!.on('message', () => {
  db.exec('PRAGMA wal_checkpoint(PASSIVE)');
});
