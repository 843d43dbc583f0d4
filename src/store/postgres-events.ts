/**
 * Hold changes shared between instances on one PostgreSQL: each change published on one instance is
 * sent with NOTIFY and delivered to the waiters and watchers of every other one (a `/wait` on A wakes
 * on a decision made on B). The channel is per schema, so deployments sharing a database stay apart.
 * After a lost connection every local waiter is woken once, to re-read what it may have missed.
 */
import pg from 'pg';
import { randomId } from '../domain/ids.ts';
import type { HoldEvents } from '../services/hold-events.ts';

interface Log {
  warn(object: object, message: string): void;
}

const RECONNECT_MS = 1000;

export async function shareHoldEvents(databaseUrl: string, events: HoldEvents, log: Log) {
  const instance = randomId('inst_', 9);
  let client: pg.Client | null = null;
  let channel = '';
  let closing = false;
  let retry: NodeJS.Timeout | undefined;

  async function connect() {
    const next = new pg.Client({ connectionString: databaseUrl });
    next.on('error', () => {}); // 'end' follows; reconnecting is handled there
    next.on('end', () => {
      if (client !== next || closing) return;
      client = null;
      retry = setTimeout(reconnect, RECONNECT_MS);
    });
    next.on('notification', (message) => {
      const change = JSON.parse(message.payload ?? '{}') as {
        from?: string;
        hold?: string;
        workspace?: string;
      };
      if (change.from !== instance && change.hold && change.workspace)
        events.deliver(change.hold, change.workspace);
    });
    await next.connect();
    const schema = (await next.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0]!
      .schema;
    channel = `approvals_holds:${schema}`;
    await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    client = next;
  }

  async function reconnect() {
    try {
      await connect();
      events.wakeAll();
    } catch (error) {
      log.warn({ err: error }, 'hold events: reconnecting to PostgreSQL failed; trying again');
      if (!closing) retry = setTimeout(reconnect, RECONNECT_MS);
    }
  }

  await connect();
  events.broadcast = (hold, workspace) => {
    const payload = JSON.stringify({ from: instance, hold, workspace });
    // Without the connection the change is not lost for good: the others see it at their next read.
    client?.query('SELECT pg_notify($1, $2)', [channel, payload]).catch(() => {});
  };
  return {
    async close() {
      closing = true;
      clearTimeout(retry);
      events.broadcast = null;
      await client?.end().catch(() => {});
    },
  };
}
