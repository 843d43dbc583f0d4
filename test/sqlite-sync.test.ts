/**
 * SQLite syncs its log off the event loop (src/store/wal-sync.ts), and still answers no write before
 * it is on disk, and no read before what it sees is: watched with strace, every answered write and
 * read was preceded by a completed sync of the log after the last writes to it. (A lazy transaction
 * is not checked: it does not wait, and on a fast disk the sync it starts may still come first.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const strace = spawnSync('strace', ['-V']).status === 0;

type Event = { kind: 'log write' | 'log sync' | 'answer'; name?: string };

/**
 * The trace's events in the order they completed: writes and syncs of the log, answers printed.
 * A call one thread began while another ran is split in two lines (`<unfinished ...>`, then
 * `<... name resumed>`): it counts where it ended.
 */
function eventsOf(trace: string): Event[] {
  const events: Event[] = [];
  const started = new Map<string, string>();
  const classify = (call: string, result: string): Event | null => {
    if (!/= \d+/.test(result)) return null;
    if (/^(pwrite64|pwritev|write)\(\d+<[^>]*-wal>/.test(call)) return { kind: 'log write' };
    if (/^(fdatasync|fsync)\(\d+<[^>]*-wal>/.test(call)) return { kind: 'log sync' };
    const answer = call.match(/^write\(1<[^>]*>, "acked ([\w-]+)\\n"/);
    return answer ? { kind: 'answer', name: answer[1] } : null;
  };
  for (const line of trace.split('\n')) {
    const [, pid, rest] = line.match(/^(\d+) +(.*)$/) ?? [];
    if (!pid || !rest) continue;
    const unfinished = rest.match(/^(.*) <unfinished \.\.\.>$/);
    if (unfinished) {
      started.set(pid, unfinished[1]!);
      continue;
    }
    const resumed = rest.match(/^<\.\.\. \w+ resumed>(.*)$/);
    const event = resumed ? classify(started.get(pid) ?? '', resumed[1]!) : classify(rest, rest);
    if (event) events.push(event);
  }
  return events;
}

test(
  'every answered SQLite write, and a read of a row just written, came after a sync of what it wrote or saw',
  { skip: !strace && 'strace is not installed (.ci/run installs it)' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'approvals-sync-'));
    try {
      const run = spawnSync(
        'strace',
        [
          '-f',
          '-y',
          '-e',
          'trace=pwrite64,pwritev,write,fdatasync,fsync',
          '-o',
          join(dir, 'trace'),
          process.execPath,
          join(import.meta.dirname, 'support', 'sqlite-acks.ts'),
          dir,
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
      assert.equal(run.status, 0, run.stderr);
      const events = eventsOf(readFileSync(join(dir, 'trace'), 'utf8'));
      const answers = events.filter((event) => event.kind === 'answer').map((event) => event.name);
      assert.equal(answers.length, 42, `answers seen: ${answers.join(', ')}`);
      assert.ok(answers.includes('read-0'));
      // Since the log's last write before each answer: was there a completed sync of the log?
      let syncedSinceWrite = false;
      let writes = 0;
      for (const event of events) {
        if (event.kind === 'log write') {
          writes += 1;
          syncedSinceWrite = false;
        } else if (event.kind === 'log sync') syncedSinceWrite = true;
        else if (!event.name!.startsWith('lazy-'))
          assert.equal(
            syncedSinceWrite,
            true,
            `${event.name} was answered before what it wrote or saw was on disk`,
          );
      }
      assert.ok(writes > 0, 'no write to the log was seen');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
