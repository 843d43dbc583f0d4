/**
 * The admin routes of the Core API (admin-scope keys only): the workspace's configuration read and
 * applied as `approvals export` and `apply` do, a draft simulated against history, and the hold list.
 * Same validation, errors and evidence as the CLI; the CLI calls them when APPROVALS_URL is set.
 */
import type { FastifyRequest } from 'fastify';
import { stringify } from 'yaml';
import { lookBackMs } from '../../domain/time-text.ts';
import { applyConfig, currentConfigVersion, exportConfig, parseConfig } from '../../services/apply-config.ts';
import { configError } from '../../services/config-file.ts';
import { listHoldRecords } from '../../services/inbox.ts';
import { simulatePolicy } from '../../services/simulate-policy.ts';
import { HttpError } from '../../web/errors.ts';
import { YAML_TYPES } from '../../web/server.ts';
import { API_HEADERS, BODY_ERRORS, COMMON_ERRORS, defineRoute } from '../route-table.ts';
import {
  anyObjectSchema,
  configAppliedSchema,
  errorWithCode,
  holdListQuerySchema,
  holdListSchema,
  simulateQuerySchema,
} from '../schemas.ts';

const ADMIN = { bucket: 'v1', admin: true, acceptsYaml: true, tags: ['Workspace'] } as const;

/** A workspace file as a body: JSON, or YAML as sent. */
const WORKSPACE_FILE = {
  'application/json': { schema: { type: 'object' } },
  'application/yaml': { schema: { type: 'string' } },
};

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

const exportRoute = defineRoute({
  ...ADMIN,
  method: 'GET',
  url: '/api/v1/workspace/config',
  operationId: 'exportConfig',
  summary: "Export the workspace's configuration",
  description:
    'The workspace file `approvals export` prints: JSON, or YAML with `Accept: application/yaml`. `ETag` and `Config-Version` give its version; send it back as `If-Match` to apply only if nothing changed since.',
  answers: {
    200: {
      description: 'The workspace file.',
      headers: {
        ...API_HEADERS,
        ETag: { schema: { type: 'string' } },
        'Config-Version': { schema: { type: 'integer' } },
        Workspace: { description: "The key's workspace (its slug).", schema: { type: 'string' } },
      },
      schema: anyObjectSchema,
      media: { 'application/yaml': WORKSPACE_FILE['application/yaml'] },
    },
    403: 'Forbidden',
    ...COMMON_ERRORS,
  },
  handler: async ({ request, reply, answer }, { ctx }) => {
    const { workspace } = request.caller!;
    // The version first: a change landing in between makes an If-Match with it refuse, never lose it.
    const version = await currentConfigVersion(ctx, workspace);
    const config = await exportConfig(ctx, workspace);
    const headers = { ETag: `"${version}"`, 'Config-Version': String(version), Workspace: workspace.slug };
    const accept = request.headers.accept ?? '';
    if (YAML_TYPES.some((type) => accept.includes(type)))
      return reply.headers(headers).type('application/yaml; charset=utf-8').send(stringify(config));
    return answer(200, config, headers);
  },
});

const applyRoute = defineRoute({
  ...ADMIN,
  method: 'PUT',
  url: '/api/v1/workspace/config',
  operationId: 'applyConfig',
  summary: 'Apply a workspace file',
  description:
    'What `approvals apply -f` does: the file (YAML or JSON) replaces what it declares, with the same validation (422 names the field and, for YAML, the line) and the same evidence (`config.applied`, changed by this key). With `If-Match: "<version>"`, only if the configuration is still at that version: otherwise 409 `conflict` with `detail` naming what changed, by whom and when.',
  headers: [{ name: 'If-Match', in: 'header', required: false, schema: { type: 'string' } }],
  body: { required: true, media: WORKSPACE_FILE },
  answers: {
    200: { description: 'Applied.', schema: configAppliedSchema },
    ...BODY_ERRORS,
    403: 'Forbidden',
    409: {
      description: 'The configuration changed since the `If-Match` version; `detail` says how.',
      schema: errorWithCode('conflict'),
    },
    412: { description: '`If-Match` is not a version.', schema: errorWithCode('precondition_failed') },
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  handler: async ({ request, answer }, { ctx }) => {
    const { workspace, key } = request.caller!;
    const expectVersion = expectedVersion(request);
    const applied = await applyConfig(ctx, workspace, parseConfig(configText(request)), {
      actor: `API key ${key.id}${key.name ? ` (${key.name})` : ''}`,
      expectVersion,
    });
    return answer(200, applied);
  },
});

const simulateRoute = defineRoute({
  ...ADMIN,
  method: 'POST',
  url: '/api/v1/workspace/simulate',
  operationId: 'simulatePolicy',
  summary: 'Replay past holds against a draft',
  description:
    'What `approvals simulate` does: the holds of the period decided again by the draft workspace file (YAML or JSON), nothing stored.',
  query: simulateQuerySchema,
  body: { required: true, media: WORKSPACE_FILE },
  answers: {
    200: { description: 'The report.', schema: anyObjectSchema },
    ...BODY_ERRORS,
    403: 'Forbidden',
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  handler: async ({ query, request, answer }, { ctx }) => {
    const sinceMs = lookBackMs(query.since)!; // the schema checked its shape
    const draft = parseConfig(configText(request));
    return answer(200, await simulatePolicy(ctx, request.caller!.workspace, draft, { sinceMs }));
  },
});

const listRoute = defineRoute({
  ...ADMIN,
  acceptsYaml: false,
  method: 'GET',
  url: '/api/v1/workspace/holds',
  operationId: 'listHolds',
  summary: "List the workspace's holds, newest first",
  description: 'Admin-scope keys only. Page with `before` (the `next_before` of the previous page).',
  query: holdListQuerySchema,
  answers: {
    200: { description: 'A page of holds.', schema: holdListSchema },
    403: 'Forbidden',
    404: 'NotFound',
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  handler: async ({ query, request, answer }, { ctx }) => {
    const { before, limit, ...filters } = query;
    const page = await listHoldRecords(ctx, request.caller!.workspace.id, filters, { before, limit });
    return answer(200, page);
  },
});

export const workspaceConfigRoutes = [exportRoute, applyRoute, listRoute, simulateRoute];
