/**
 * Traces with OpenTelemetry (docs/settings.md, "Telemetry"), exported over OTLP/HTTP only when the
 * standard OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. Without them no
 * SDK starts, and the few instrumented choke points (the web server, the database, the HTTP client,
 * the services' submit and decide) check `tracing.on` first: tracing off costs nothing measurable.
 *
 * Spans carry names, ids and counts only, never a payload value (arguments, tokens, keys, bodies).
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  ROOT_CONTEXT,
  type Attributes,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

export { SpanKind };

/** Whether traces are recorded: set once, when the SDK starts. */
export const tracing = { on: false };

let provider: TracerProvider | null = null;
const tracer = () => trace.getTracer('action-approval-service');

/** Whether the standard settings ask for traces over OTLP (OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none say no). */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts the SDK once per process when the settings ask for it: W3C trace context, spans batched and
 * sent over OTLP/HTTP, protobuf unless OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is `http/json`. The
 * exporters read the endpoint, headers, timeout and TLS settings themselves; OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES name the service. Called before storage opens, which is traced from the start.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): void {
  if (provider || !tracingWanted(env)) return;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  const exporter = protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
  const resource = resourceFromAttributes({ 'service.name': 'action-approval-service' }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  provider = new TracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        ...(Number.isFinite(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {}),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  tracing.on = true;
}

/** Sends the spans recorded so far (at exit: the last batch would be lost). */
export async function flushTraces(): Promise<void> {
  await provider?.forceFlush();
}

/**
 * Runs `work` in a span of its own (a child of the active one), ended when it settles and marked as an
 * error when it throws. Tracing off: `work` as it is.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: () => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!tracing.on) return work();
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).name });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Adds attributes to the active span (what is known only once the work is done: a hold's id and status). */
export function describeSpan(attributes: Attributes): void {
  if (tracing.on) trace.getActiveSpan()?.setAttributes(attributes);
}

/** `headers` with the active trace's `traceparent` added, for a request sent out. Tracing off: `headers`. */
export function withTraceparent(headers: Record<string, string> = {}): Record<string, string> {
  if (!tracing.on) return headers;
  const carrier = { ...headers };
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** The active trace's `traceparent`, to resume it later elsewhere (an approved call run by a worker). */
export function currentTraceparent(): string | null {
  return withTraceparent().traceparent ?? null;
}

/** Runs `work` as part of the trace `traceparent` names (null: in the active context). */
export function resumingTrace<T>(traceparent: string | null, work: () => Promise<T>): Promise<T> {
  if (!tracing.on || !traceparent) return work();
  return context.with(propagation.extract(context.active(), { traceparent }), work);
}

/**
 * A server span for every request the server answers, named by its route once routing found it (a
 * template: never a token from the path). It wraps the server's request listeners (Fastify's), so all
 * of a request's handling, its body included, runs in the span's context, and continues the trace of
 * the request's `traceparent` (an agent's), else starts one. Tracing off: nothing changes.
 */
export function traceRequests(app: FastifyInstance): void {
  if (!tracing.on) return;
  const server = app.server;
  for (const listener of server.listeners('request') as RequestListener[]) {
    server.off('request', listener);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const parent = propagation.extract(ROOT_CONTEXT, request.headers);
      const attributes = { 'http.request.method': request.method ?? '' };
      const span = tracer().startSpan(
        request.method ?? 'HTTP',
        { kind: SpanKind.SERVER, attributes },
        parent,
      );
      const active = trace.setSpan(parent, span);
      context.bind(active, request);
      context.bind(active, response);
      response.once('close', () => {
        span.setAttribute('http.response.status_code', response.statusCode);
        if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      });
      context.with(active, () => listener(request, response));
    });
  }
  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url ?? 'unmatched';
    trace.getActiveSpan()?.updateName(`${request.method} ${route}`).setAttribute('http.route', route);
  });
}
