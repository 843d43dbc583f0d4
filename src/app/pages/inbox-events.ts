/** Live updates (`/app/events`): one event per change to the workspace's holds; the page refetches itself. */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';

export function inboxEvents(app: FastifyInstance, ctx: ServiceContext) {
  app.get('/app/events', async (request, reply) => {
    const session = request.appSession!;
    reply.hijack();
    const stream = reply.raw;
    stream.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    stream.write('retry: 3000\n\n');
    let pending: NodeJS.Timeout | undefined;
    let ended = false;
    const heartbeat = setInterval(() => stream.write(': ping\n\n'), 25_000);
    const stop = ctx.holdEvents.watch(session.workspace.id, (event) => {
      // A stream opened while the service stops hears `closed` inside `watch` itself, before `stop`
      // is set: ending it a tick later still ends it, or it would hold the server's shutdown forever.
      if (event === 'closed') return queueMicrotask(end);
      // Bursts of changes become one event.
      pending ??= setTimeout(() => {
        pending = undefined;
        stream.write('event: holds\ndata: changed\n\n');
      }, 100);
    });
    function end() {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      clearTimeout(pending);
      stop();
      stream.end();
    }
    request.raw.on('close', end);
  });
}
