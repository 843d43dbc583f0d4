/**
 * Webhook delivery against a fast local receiver (answers 204 at once), beside its floor: the same
 * bodies POSTed straight to the same receiver from this process.
 * - throughput: 1,000 events (denied submissions, each writing its event in its transaction) queued
 *   while the endpoint is disabled, then released at once; events delivered per second, beside raw
 *   POSTs with the worker's batch width (20 at a time, on kept-alive connections, as the sender does);
 *   and this process's CPU per delivery beside its CPU per raw POST (the receiver's share in both).
 *   A first 200 of each, delivered and POSTed alike, warm both paths up.
 * - delay: a human approval of a pending hold to its delivery arriving (p50, p99), one at a time,
 *   beside one raw POST from start to its arrival.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decideHold } from '../src/services/decide-hold.ts';
import { submitHold } from '../src/services/submit-hold.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { disableWebhookEndpoint } from '../src/store/webhooks.ts';
import { type BenchService, compared, type Figure, percentile, startBenchService } from './lib.ts';

const EVENTS = 1_000;
/** Events delivered, and POSTed raw, before the throughput is measured. */
const WARM_UP = 200;
const DECISIONS = 200;
const BATCH = 20;

/** User and system CPU of a `process.cpuUsage` difference, in µs. */
const cpuMicros = (used: NodeJS.CpuUsage) => used.user + used.system;

interface Receiver {
  url: string;
  count: number;
  /** Resolves when `n` requests in all have arrived. */
  reach(n: number): Promise<void>;
  /** Resolves with `performance.now()` when a delivery for `holdId` arrives. */
  arrival(holdId: string): Promise<number>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  let count = 0;
  let target = Infinity;
  let reached: (() => void) | undefined;
  const waiting = new Map<string, (at: number) => void>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      count += 1;
      response.writeHead(204).end();
      const text = Buffer.concat(chunks).toString('utf8');
      const id = text.includes('"id"') ? (JSON.parse(text) as { id?: string }).id : undefined;
      if (id && waiting.has(id)) {
        waiting.get(id)!(at);
        waiting.delete(id);
      }
      if (count >= target && reached) {
        reached();
        reached = undefined;
      }
    });
  });
  // Node's default keep-alive (5 s), as most receivers keep a connection open a few seconds or more.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get count() {
      return count;
    },
    reach(n) {
      if (count >= n) return Promise.resolve();
      target = n;
      return new Promise((resolve) => (reached = resolve));
    },
    arrival: (holdId) => new Promise((resolve) => waiting.set(holdId, resolve)),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Connections kept alive and reused, as the sender's are. */
const rawAgent = new http.Agent({ keepAlive: true });

/** One POST as the sender makes it; resolves when the answer is read. */
function rawPost(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent: rawAgent,
        headers: { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

export async function run(): Promise<{ figures: Figure[]; skipped: { figure: string; reason: string }[] }> {
  const receiver = await startReceiver();
  // The receiver is on loopback, which the service refuses unless the operator allows it.
  const allowPrivate = process.env.ALLOW_PRIVATE_TARGETS;
  process.env.ALLOW_PRIVATE_TARGETS = 'true';
  let bench: BenchService | undefined;
  try {
    bench = await startBenchService();
    const { ctx } = bench.service;
    const config = {
      members: [{ email: 'admin@bench.test', name: 'Admin', role: 'admin' }],
      tools: [
        { connection: 'SDK', tool: 'wire_money', classification: 'deny' },
        { connection: 'SDK', tool: 'send_invoice', classification: 'approval' },
      ],
      webhook: { url: receiver.url },
    };
    const { workspace } = await bench.workspace(config);
    const caller = {
      workspace,
      environment: 'live' as const,
      requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
    };
    const submission = (tool: string, i: number) => ({
      connection: 'SDK',
      toolName: tool,
      arguments: { amount: 100 + i, currency: 'EUR', invoice: `INV-${i}` },
      agent: { id: 'bench-agent', label: null },
      context: { run: 'bench' },
      idempotencyKey: `${tool}-${i}`,
    });

    /**
     * Queues `count` events with the endpoint disabled (as after a 410), then releases them: the time
     * until the last has arrived, and this process's CPU until every attempt is recorded.
     */
    const deliver = async (first: number, count: number) => {
      await disableWebhookEndpoint(ctx.db, workspace.id, ctx.now());
      const arrived = receiver.count;
      for (let i = first; i < first + count; i++) await submitHold(ctx, caller, submission('wire_money', i));
      if (receiver.count !== arrived) throw new Error('bench: a disabled endpoint was delivered to');
      // Other events may wait with them (an evidence.checkpoint): they are delivered too.
      const queued = await ctx.db.all<{ event: string; body: string }>(
        "SELECT event, body FROM webhook_events WHERE workspace_id = $1 AND state = 'pending'",
        [workspace.id],
      );
      const bodies = queued.filter((row) => row.event === 'hold.rejected').map((row) => row.body);
      if (bodies.length !== count) throw new Error(`bench: ${bodies.length} events queued, not ${count}`);
      const released = performance.now();
      await bench!.apply(workspace, { webhook: { url: receiver.url } }); // declaring it again re-enables it
      const cpu = process.cpuUsage();
      ctx.holdEvents.publish('bench', workspace.id); // wakes the worker (its interval is a minute here)
      await receiver.reach(arrived + queued.length);
      const ms = performance.now() - released;
      await bench!.service.runWorkers(); // each attempt recorded, so its CPU is counted
      return { bodies, ms, cpuUs: cpuMicros(process.cpuUsage(cpu)) };
    };
    /** The same bodies POSTed straight to the receiver, `BATCH` at a time. */
    const postRaw = async (bodies: string[]) => {
      const start = performance.now();
      const cpu = process.cpuUsage();
      let next = 0;
      await Promise.all(
        Array.from({ length: BATCH }, async () => {
          while (next < bodies.length) await rawPost(receiver.url, bodies[next++]!);
        }),
      );
      return { ms: performance.now() - start, cpuUs: cpuMicros(process.cpuUsage(cpu)) };
    };

    // Throughput, after a first round of each that warms both paths up (compiled code, connections).
    await postRaw((await deliver(0, WARM_UP)).bodies);
    const { bodies, ms: deliveredMs, cpuUs: deliveryCpuUs } = await deliver(WARM_UP, EVENTS);
    const { ms: floorMs, cpuUs: floorCpuUs } = await postRaw(bodies);

    // Delay: one human approval at a time, from the call to the delivery's arrival.
    const admin = (await findMemberByEmail(ctx.db, workspace.id, 'admin@bench.test'))!;
    const pending: string[] = [];
    for (let i = 0; i < DECISIONS + 10; i++) {
      const { hold } = await submitHold(ctx, caller, submission('send_invoice', i));
      pending.push(hold.id);
    }
    const delays: number[] = [];
    for (const [i, holdId] of pending.entries()) {
      const arrived = receiver.arrival(holdId);
      const start = performance.now();
      const result = await decideHold(ctx, {
        workspaceId: workspace.id,
        holdId,
        memberId: admin.id,
        verdict: 'approve',
        channel: 'inbox',
      });
      if (result.hold.status !== 'approved') throw new Error(`bench: ${holdId} is ${result.hold.status}`);
      const at = await arrived;
      if (i >= 10) delays.push(at - start); // the first ten warm up
    }
    const sample = bodies[0]!;
    const raw: number[] = [];
    for (let i = 0; i < DECISIONS + 10; i++) {
      const arrived = receiver.arrival(JSON.parse(sample).id as string);
      const start = performance.now();
      await rawPost(receiver.url, sample);
      const at = await arrived;
      if (i >= 10) raw.push(at - start);
    }

    const throughput: Figure = {
      bench: 'webhooks',
      figure: `deliveries per second (${EVENTS} queued)`,
      value: EVENTS / (deliveredMs / 1000),
      unit: 'events/s',
      note: `${EVENTS} hold.rejected events released at once, after ${WARM_UP} released alike (and POSTed raw) to warm up; worker batches of ${BATCH}, SQLite, receiver answers 204; issue 43's goal, at least 0.5 of the raw POSTs: ${2 * floorMs >= deliveredMs ? 'met' : 'NOT MET'}`,
    };
    const floor: Figure = {
      bench: 'webhooks',
      figure: `raw POSTs per second, ${BATCH} at a time`,
      value: EVENTS / (floorMs / 1000),
      unit: 'events/s',
      note: 'the same bodies to the same receiver from this process, on kept-alive connections',
    };
    const floorCpuPer: Figure = {
      bench: 'webhooks',
      figure: 'CPU per raw POST',
      value: floorCpuUs / EVENTS,
      unit: 'µs',
      note: "this process's CPU (process.cpuUsage) over the raw POSTs, the receiver's share included",
    };
    const cpuPerDelivery: Figure = {
      bench: 'webhooks',
      figure: 'CPU per delivery',
      value: deliveryCpuUs / EVENTS,
      unit: 'µs',
      note: "this process's CPU (process.cpuUsage) from the release until every attempt is recorded: the service's worker (outbox read, signatures, POST, attempt record) and the receiver's share",
    };
    const rawFloor = (p: number): Figure => ({
      bench: 'webhooks',
      figure: `raw POST to arrival, p${p}`,
      value: percentile(raw, p),
      unit: 'ms',
    });
    const delay = (p: number): Figure => ({
      bench: 'webhooks',
      figure: `decision to delivery, p${p}`,
      value: percentile(delays, p),
      unit: 'ms',
      ...(p === 50 && {
        note: `${DECISIONS} approvals one at a time (decideHold in process, SQLite) until the receiver has the body`,
      }),
    });
    return {
      figures: [
        floor,
        compared(throughput, floor),
        floorCpuPer,
        compared(cpuPerDelivery, floorCpuPer),
        rawFloor(50),
        rawFloor(99),
        compared(delay(50), rawFloor(50)),
        compared(delay(99), rawFloor(99)),
      ],
      skipped: [],
    };
  } finally {
    await bench?.close();
    rawAgent.destroy();
    await receiver.close();
    if (allowPrivate === undefined) delete process.env.ALLOW_PRIVATE_TARGETS;
    else process.env.ALLOW_PRIVATE_TARGETS = allowPrivate;
  }
}
