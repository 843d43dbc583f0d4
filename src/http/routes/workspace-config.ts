/**
 * The admin routes of the Core API (admin-scope keys only): the workspace's configuration read and
 * applied as `approvals export` and `apply` do, a draft simulated against history, and the hold list.
 * Same validation, errors and evidence as the CLI; the CLI calls them when APPROVALS_URL is set.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { lookBackMs } from '../../domain/time-text.ts';
import { stringify } from 'yaml';
import { applyConfig, currentConfigVersion, exportConfig, parseConfig } from '../../services/apply-config.ts';
import { configError } from '../../services/config-file.ts';
import type { ServiceContext } from '../../services/context.ts';
import { listHoldRecords } from '../../services/inbox.ts';
import { simulatePolicy } from '../../services/simulate-policy.ts';
import { fieldIssues, HttpError, sendValidationError } from '../../web/errors.ts';
import { YAML_TYPES } from '../../web/server.ts';
import { holdListQuerySchema, simulateQuerySchema } from '../schemas.ts';

const ADMIN = { config: { bucket: 'v1' as const, admin: true, acceptsYaml: true } };

/** The body as the text `parseConfig` reads: YAML as sent, JSON as parsed (JSON is YAML). */
function configText(request: FastifyRequest): string {
  if (request.body === undefined) throw new HttpError(400, 'invalid_json');
  if (typeof request.body === 'string') return request.body;
  try {
    return JSON.stringify(request.body);
  } catch {
    // Nesting deeper than the stack: not a workspace file.
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON' }]);
  }
}

/** `If-Match: "7"` (or `7`): apply only if the configuration is still at version 7. */
function expectedVersion(request: FastifyRequest): number | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(header);
  if (!match) throw new HttpError(412, 'precondition_failed');
  return Number(match[1]);
}

export function workspaceConfigRoutes(
  app: FastifyInstance,
  { ctx, docsUrl }: { ctx: ServiceContext; docsUrl: () => string },
) {
  const invalid = (reply: FastifyReply, error: Parameters<typeof fieldIssues>[0]) =>
    sendValidationError(reply, docsUrl(), fieldIssues(error));

  app.get('/api/v1/workspace/config', ADMIN, async (request, reply) => {
    const { workspace } = request.caller!;
    // The version first: a change landing in between makes an If-Match with it refuse, never lose it.
    const version = await currentConfigVersion(ctx, workspace);
    const config = await exportConfig(ctx, workspace);
    reply.header('ETag', `"${version}"`).header('Config-Version', String(version));
    const accept = request.headers.accept ?? '';
    if (YAML_TYPES.some((type) => accept.includes(type)))
      return reply.type('application/yaml; charset=utf-8').send(stringify(config));
    return config;
  });

  app.put('/api/v1/workspace/config', ADMIN, async (request) => {
    const { workspace, key } = request.caller!;
    const expectVersion = expectedVersion(request);
    return applyConfig(ctx, workspace, parseConfig(configText(request)), {
      actor: `API key ${key.id}${key.name ? ` (${key.name})` : ''}`,
      expectVersion,
    });
  });

  app.post('/api/v1/workspace/simulate', ADMIN, async (request, reply) => {
    const query = simulateQuerySchema.safeParse(request.query);
    if (!query.success) return invalid(reply, query.error);
    const sinceMs = lookBackMs(query.data.since)!; // the schema checked its shape
    return simulatePolicy(ctx, request.caller!.workspace, parseConfig(configText(request)), { sinceMs });
  });

  app.get('/api/v1/workspace/holds', { config: { bucket: 'v1', admin: true } }, async (request, reply) => {
    const query = holdListQuerySchema.safeParse(request.query);
    if (!query.success) return invalid(reply, query.error);
    const { before, limit, ...filters } = query.data;
    return listHoldRecords(ctx, request.caller!.workspace.id, filters, { before, limit });
  });
}
