/**
 * What instances on one PostgreSQL tell each other, with NOTIFY: each hold change published on one
 * instance is delivered to the waiters and watchers of every other one (a `/wait` on A wakes on a
 * decision made on B), and the MCP relay's messages reach the instance that can act on them (a
 * cancellation of a call running elsewhere, say). The channel is per schema, so deployments sharing
 * a database stay apart. After a lost connection every local waiter is woken once, to re-read what
 * it may have missed. The runtime hands in this instance's two ends, which publish here and
 * receive from here: the hold events (services/hold-events.ts) and the MCP relay (mcp/relay.ts).
 */
import pg from 'pg';
import { randomId } from '../domain/ids.ts';
import type { Statement } from './statements.ts';

interface Log {
  warn(object: object, message: string): void;
}

/** This instance's hold events: what changed here goes out, what changed elsewhere comes in. */
interface LocalHolds {
  broadcast: ((holdId: string, workspaceId: string, routine: boolean) => void) | null;
  broadcastStatement: ((holdId: string, workspaceId: string, routine: boolean) => Statement) | null;
  deliver(holdId: string, workspaceId: string, routine: boolean): void;
  wakeAll(): void;
}

/** This instance's MCP relay: its messages go out as they are, and come in to `receive`. */
interface LocalRelay<RelayMessage> {
  broadcast: ((message: RelayMessage) => void) | null;
  receive(message: RelayMessage): void;
}

type Message<RelayMessage> = { from: string } & (
  | { hold: string; workspace: string; routine?: boolean; mcp?: undefined }
  | { mcp: RelayMessage; hold?: undefined }
);

const RECONNECT_MS = 1000;
/** NOTIFY payloads must stay under 8000 bytes. */
const MAX_PAYLOAD = 7900;
/** Messages sent in one statement at most. */
const MAX_PER_STATEMENT = 100;

/** A hold change's message: two ids and a flag, well under NOTIFY's limit. */
const holdMessage = (from: string, hold: string, workspace: string, routine: boolean) => ({
  from,
  hold,
  workspace,
  ...(routine ? { routine } : {}),
});

/** `message` on `channel`, as a statement of a transaction (it is delivered as that commits). */
const notifyStatement = (channel: string, message: object): Statement => ({
  text: 'SELECT pg_notify($1, $2)',
  params: [channel, JSON.stringify(message)],
});

export async function shareEvents<RelayMessage extends { type: string }>(
  databaseUrl: string,
  { holds, mcp }: { holds: LocalHolds; mcp: LocalRelay<RelayMessage> },
  log: Log,
) {
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
    next.on('notification', (notification) => {
      // Thrown here, an error would end the process: a message that cannot be read is dropped.
      try {
        const message = JSON.parse(notification.payload ?? '{}') as Partial<Message<RelayMessage>>;
        if (message.from === instance) return;
        if (message.mcp) mcp.receive(message.mcp);
        else if (message.hold && message.workspace)
          holds.deliver(message.hold, message.workspace, message.routine === true);
      } catch (error) {
        log.warn({ errorName: (error as Error).name }, 'instance events: a message was not understood');
      }
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
      holds.wakeAll();
    } catch (error) {
      log.warn({ err: error }, 'instance events: reconnecting to PostgreSQL failed; trying again');
      if (!closing) retry = setTimeout(reconnect, RECONNECT_MS);
    }
  }

  /** The messages of this turn of the event loop, sent together in one statement (in order). */
  const queued: string[] = [];
  // One statement at a time on the connection: a turn's messages wait for the last turn's to be sent.
  let sending: Promise<unknown> = Promise.resolve();
  function flush(): Promise<unknown> {
    const payloads = queued.splice(0, MAX_PER_STATEMENT);
    if (queued.length > 0) setImmediate(flush);
    const calls = payloads.map((_, i) => `pg_notify($1, $${i + 2})`);
    // Without the connection a hold change is not lost for good: the others see it at their next
    // read. An MCP message is lost, as it would be with the instance that should act on it.
    sending = sending.then(() =>
      client?.query(`SELECT ${calls.join(', ')}`, [channel, ...payloads]).catch(() => {}),
    );
    return sending;
  }

  function send(message: Message<RelayMessage>) {
    const payload = JSON.stringify(message);
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) {
      log.warn({ type: message.mcp?.type }, 'instance events: a message too large for NOTIFY was dropped');
      return;
    }
    if (queued.push(payload) === 1) setImmediate(flush);
  }

  await connect();
  holds.broadcast = (...change) => send(holdMessage(instance, ...change));
  holds.broadcastStatement = (...change) => notifyStatement(channel, holdMessage(instance, ...change));
  mcp.broadcast = (message) => send({ from: instance, mcp: message });
  return {
    async close() {
      closing = true;
      clearTimeout(retry);
      // broadcastStatement stays: a transaction's notice needs the database, not this connection.
      holds.broadcast = null;
      mcp.broadcast = null;
      // What this turn said goes out before the connection ends.
      while (queued.length > 0) await flush();
      await sending;
      await client?.end().catch(() => {});
    },
  };
}
