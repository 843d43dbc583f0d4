/**
 * One definition per Core API operation: method, URL, rate bucket, params, query, body, answers and the
 * handler, in one place. `registerRoutes` mounts them on Fastify and validates what comes in with their
 * schemas; openapi.ts writes the document from the same definitions. A handler's answer is typed with
 * the schema of its status (`z.input`: what goes on the wire), so an answer that drifts from the
 * document fails `tsc`. (The shape follows Unkey's zod route definitions, with our own small registrar.)
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ServiceContext } from '../services/context.ts';
import { fieldIssues, HttpError, sendValidationError } from '../web/errors.ts';
import type { Bucket } from '../web/guard.ts';
import type { Metrics } from '../web/metrics.ts';
import type { RateCounter } from '../web/rate-limiter.ts';

export type Json = Record<string, unknown>;

/** The answers every operation shares, in the document's `components.responses`. */
export type SharedAnswer =
  | 'InvalidJson'
  | 'Unauthorized'
  | 'HoldLimitReached'
  | 'NotFound'
  | 'PayloadTooLarge'
  | 'Forbidden'
  | 'KeyNotBound'
  | 'UnsupportedMediaType'
  | 'ValidationFailed'
  | 'RateLimited'
  | 'Internal'
  | 'Unavailable';

export const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Headers on every /api/v1 answer (the 503 of a server that is shutting down has none of the RateLimit ones). */
export const API_HEADERS = {
  'RateLimit-Limit': headerRef('RateLimit-Limit'),
  'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
  'RateLimit-Reset': headerRef('RateLimit-Reset'),
  'X-Request-Id': headerRef('X-Request-Id'),
};

/** The answers of every operation that needs an API key. */
export const COMMON_ERRORS = {
  401: 'Unauthorized',
  429: 'RateLimited',
  500: 'Internal',
  503: 'Unavailable',
} as const satisfies Answers;

/** The answers of an operation that reads a body. */
export const BODY_ERRORS = {
  400: 'InvalidJson',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
} as const satisfies Answers;

export interface Answer {
  description: string;
  /** The JSON body. */
  schema?: z.ZodType;
  /** Other media types (OpenAPI content, as written): the handler sends those itself. */
  media?: Record<string, Json>;
  /** OpenAPI headers; `API_HEADERS` when not given. */
  headers?: Json;
}

export type Answers = Record<number, Answer | SharedAnswer>;

/** The statuses of `A` with a JSON body, and that body as it goes on the wire. */
type JsonStatus<A extends Answers> = {
  [S in keyof A & number]: A[S] extends { schema: z.ZodType } ? S : never;
}[keyof A & number];
type BodyOf<A extends Answers, S extends keyof A> = A[S] extends { schema: infer T extends z.ZodType }
  ? z.input<T>
  : never;

/** A JSON answer, made by `Call.answer` (so its body was checked against its status's schema). */
export class Answered {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string>;
  constructor(status: number, body: unknown, headers: Record<string, string>) {
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

/** An answer of another media type the handler sent itself: the reply. */
type SentItself<A extends Answers> =
  Extract<A[keyof A], { media: Json }> extends never ? never : FastifyReply;

type Parsed<T> = T extends z.ZodType ? z.output<T> : undefined;

export interface ApiEnv {
  ctx: ServiceContext;
  metrics: Metrics;
  counter: RateCounter;
}

export interface Call<P, Q, B, A extends Answers> {
  params: Parsed<P>;
  query: Parsed<Q>;
  body: Parsed<B>;
  request: FastifyRequest;
  reply: FastifyReply;
  answer: <S extends JsonStatus<A>>(
    status: S,
    body: BodyOf<A, S>,
    headers?: Record<string, string>,
  ) => Answered;
}

export interface Route<
  P extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  A extends Answers = Answers,
> {
  method: 'GET' | 'POST' | 'PUT';
  /** As Fastify writes it: `/api/v1/holds/:id`. */
  url: string;
  /** The rate bucket; the guard then requires an API key. None: a public operation, no key. */
  bucket?: Bucket;
  /** Admin-scope keys only. */
  admin?: boolean;
  /** Takes a YAML body besides JSON (a workspace file). */
  acceptsYaml?: boolean;
  operationId: string;
  tags: readonly string[];
  summary: string;
  description?: string;
  /** Path parameters: one that does not pass names nothing, so it is answered 404. */
  params?: P;
  /** Query parameters: 422 when they do not pass. */
  query?: Q;
  /** Request headers the handler reads itself (OpenAPI parameters, as written). */
  headers?: Json[];
  /**
   * The body: with a `schema`, validated (no body: 400 when required, else parsed as `{}`); with
   * `media` only (OpenAPI content, as written), read by the handler itself.
   */
  body?: { required: boolean; schema?: B; media?: Record<string, Json> };
  answers: A;
  handler: (call: Call<P, Q, B, A>, env: ApiEnv) => Promise<Answered | SentItself<A>>;
}

/**
 * A route, its handler's types inferred from its schemas and answers; checked here, it joins the table
 * as a plain `Route` (the table holds routes of every shape).
 */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  const A extends Answers = Answers,
>(route: Route<P, Q, B, A>): Route {
  return route as unknown as Route;
}

/** Where a 422 points the caller: the one URL the contract names (decisions.md, Names and addresses). */
export const docsUrl = (ctx: ServiceContext) => `${ctx.publicUrl}/docs/holds`;

/** Params, query and body, in that order, as the route's schemas read them; the zod error of the first that fails. */
function read(route: Route, request: FastifyRequest) {
  const params = route.params?.safeParse(request.params);
  if (params && !params.success) throw new HttpError(404, 'not_found');
  const query = route.query?.safeParse(request.query);
  if (query && !query.success) return query.error;
  const schema = route.body?.schema;
  if (schema && request.body === undefined && route.body!.required) throw new HttpError(400, 'invalid_json');
  const body = schema?.safeParse(request.body ?? {});
  if (body && !body.success) return body.error;
  return { params: params?.data, query: query?.data, body: body?.data };
}

export function registerRoutes(app: FastifyInstance, routes: Route[], env: ApiEnv) {
  for (const route of routes) {
    const { bucket, admin, acceptsYaml } = route;
    app.route({
      method: route.method,
      url: route.url,
      config: { bucket, admin, acceptsYaml },
      handler: async (request, reply) => {
        const input = read(route, request);
        if (input instanceof z.ZodError)
          return sendValidationError(reply, docsUrl(env.ctx), fieldIssues(input));
        const answer = (status: number, body: unknown, headers = {}) => new Answered(status, body, headers);
        const call = { ...input, request, reply, answer };
        const answered = await route.handler(call, env);
        if (!(answered instanceof Answered)) return answered;
        return reply.code(answered.status).headers(answered.headers).send(answered.body);
      },
    });
  }
}
