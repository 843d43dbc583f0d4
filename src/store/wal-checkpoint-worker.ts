/** The thread of `wal-checkpoints.ts`: a connection of its own, a PASSIVE checkpoint when asked. */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const db = new DatabaseSync((workerData as { file: string }).file);
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

parentPort!.on('message', (message: 'checkpoint' | 'close') => {
  if (message === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  // `log`: frames in the log; `checkpointed`: how many of them are in the database now.
  const { log, checkpointed } = checkpoint.get() as { log: number; checkpointed: number };
  parentPort!.postMessage(log === checkpointed);
});
