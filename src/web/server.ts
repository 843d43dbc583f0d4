/**
 * The web server the transports stand on: one Fastify instance with the body parsers, request ids,
 * the guard, metrics, errors and shutdown every route shares. The composition root (runtime.ts) mounts
 * the Core API, the app and the MCP endpoint on it side by side; none of them imports another.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyRequest, type HTTPMethods } from 'fastify';
import { prettyLog } from './pretty-log.ts';
import { errorHandler, HttpError, sendError } from './errors.ts';
import { guardApi } from './guard.ts';
import type { Metrics } from './metrics.ts';
import type { RateCounter } from './rate-limiter.ts';
import type { ServiceContext } from '../services/context.ts';

/** A workspace file's media types: parsed as text where a route's config says `acceptsYaml`. */
export const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

export const BODY_LIMIT = 1024 * 1024;

/** Paths whose last segment is a bearer secret: a decision link, a sign-in link, a passkey enrolment link. */
const SECRET_PATH = /^(\/d\/|\/app\/login\/|\/app\/settings\/passkeys\/enrol\/)[^/?#]+/;

/** What a log line says of a request: never a secret from its path, never its query or headers. */
function describeRequest(request: FastifyRequest) {
  const path = request.url.split('?')[0]!.replace(SECRET_PATH, '$1[redacted]');
  return { method: request.method, url: path, remoteAddress: request.ip };
}
const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export interface WebServerOptions {
  ctx: ServiceContext;
  metrics: Metrics;
  counter: RateCounter;
  /** `format`: readable lines (pretty-log.ts) or JSON; absent, readable when stdout is a terminal. */
  log: { level: string; format?: 'json' | 'pretty' };
  /** false, a number of proxy hops, or the proxies' addresses (config.ts, TRUST_PROXY). */
  trustProxy: false | number | string;
  /** Set `closing` when shutdown begins: new requests get 503, answers close their connection. */
  lifecycle: { closing: boolean };
  /** Adds the routes (Core API, app, MCP endpoint); a path known with other methods then answers 405. */
  mount: (app: FastifyInstance) => void;
}

/**
 * At shutdown, every connection is closed as soon as it carries no request. Node closes those that
 * finished one, but not those that never sent any (a browser's preconnect): each would hold the stop
 * until its request timeout (300 s). A connection busy with requests closes when the last one ends.
 */
function closeQuietConnections(app: FastifyInstance) {
  const inFlight = new Map<Socket, number>();
  let closing = false;
  app.server.on('connection', (socket: Socket) => {
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
  });
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, left);
      if (closing && left === 0) socket.destroySoon();
    });
  });
  app.addHook('preClose', async () => {
    closing = true;
    for (const [socket, requests] of inFlight) if (requests === 0) socket.destroySoon();
  });
}

function loggerOptions({ level, format }: WebServerOptions['log']) {
  const pretty = (format ?? (process.stdout.isTTY ? 'pretty' : 'json')) === 'pretty';
  return {
    level,
    serializers: { req: describeRequest },
    ...(pretty ? { stream: prettyLog(process.stdout) } : {}),
  };
}

export function buildWebServer({
  ctx,
  metrics,
  counter,
  log,
  trustProxy,
  lifecycle,
  mount,
}: WebServerOptions): FastifyInstance {
  const docsUrl = () => `${ctx.publicUrl}/docs/holds`;
  const app = Fastify({
    logger: loggerOptions(log),
    // A URL Fastify cannot decode: our 404, not its message, which quotes the URL.
    frameworkErrors: (error, request, reply) => void errorHandler(docsUrl)(error, request, reply),
    bodyLimit: BODY_LIMIT,
    // A number of hops as the function Fastify's types accept: the nearest `trustProxy` proxies.
    trustProxy: typeof trustProxy === 'number' ? (_address, hop) => hop < trustProxy : trustProxy,
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
  });

  closeQuietConnections(app);

  // JSON only; an empty body is "no body" (valid for /wait). Parse errors never quote the input.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new HttpError(400, 'invalid_json'), undefined);
    }
  });

  // YAML (a workspace file) only where a route takes it; elsewhere it is an unsupported media type.
  app.addContentTypeParser(YAML_TYPES, { parseAs: 'string' }, (request, body, done) => {
    if (!request.routeOptions.config.acceptsYaml) return done(new HttpError(415, 'unsupported_media_type'));
    done(null, body === '' ? undefined : body);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    if (lifecycle.closing) {
      reply.header('Connection', 'close');
      return sendError(reply, 503, 'unavailable');
    }
    const bucket = request.routeOptions.config.bucket;
    if (bucket && !(await guardApi(counter, ctx, request, reply, bucket))) return reply;
  });
  // Answers given while shutting down (woken waiters, requests in flight) close their connection,
  // so no idle keep-alive connection holds the process open.
  app.addHook('onSend', async (_request, reply) => {
    if (lifecycle.closing) reply.header('Connection', 'close');
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequests
      .labels(request.method, request.routeOptions.url ?? 'unmatched', String(reply.statusCode))
      .observe(reply.elapsedTime / 1000);
  });

  app.setErrorHandler(errorHandler(docsUrl));
  app.setNotFoundHandler(async (request, reply) => {
    if (request.url.startsWith('/api/') && !(await guardApi(counter, ctx, request, reply, 'v1')))
      return reply;
    return sendError(reply, 404, 'not_found');
  });

  // Known path, wrong method: 405 with Allow, for every route registered below.
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const set = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) set.add(method);
    methodsByPath.set(route.url, set);
  });

  mount(app);

  for (const [url, methods] of [...methodsByPath]) {
    const missing = METHODS.filter((method) => !methods.has(method));
    if (missing.length === 0 || missing.length === METHODS.length) continue;
    const allow = METHODS.filter((method) => methods.has(method)).join(', ');
    const bucket = url.startsWith('/api/') ? 'v1' : undefined;
    app.route({
      method: missing,
      url,
      config: { bucket },
      handler: async (_request, reply) => sendError(reply.header('Allow', allow), 405, 'method_not_allowed'),
    });
  }
  return app;
}
