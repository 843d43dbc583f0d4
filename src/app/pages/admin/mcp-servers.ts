/**
 * MCP servers: the upstreams agents reach through `{PUBLIC_URL}/mcp/<slug>`. Register, edit and remove
 * them (through `applyConfig`, like `approvals apply`), test a connection, and see the tools each one
 * listed. Header values are credentials: sealed in the database and never shown again, in any page.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { currentConfigVersion } from '../../../services/apply-config.ts';
import { toolsOf } from '../../../services/classify-tool.ts';
import type { ServiceContext } from '../../../services/context.ts';
import { type McpConnectionTest, mcpServerOf, mcpServersOf } from '../../../services/mcp-servers.ts';
import { mcpResourceUrl } from '../../../services/oauth.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import type { McpServer } from '../../../store/mcp-servers.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachIssues, type FieldErrors } from '../../forms/form.ts';
import {
  conflicts,
  parseServerForm,
  refusedErrors,
  type ServerEntry,
  serverEntry,
  typedServer,
} from '../../forms/mcp-servers.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import { type ServerCard, serverPath } from '../../views/mcp-servers/card.ts';
import { blankServer, type ServerFormValues } from '../../views/mcp-servers/form.ts';
import {
  formProblems,
  removeQuestion,
  SERVER_NOTICES,
  serverEditBody,
  serverListBody,
} from '../../views/mcp-servers/page.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  currentConfig,
  describeIssue,
  readAtOf,
  versionPassedOn,
} from './shared.ts';
import { confirmCard } from '../../views/form-fields.ts';

const LIST = '/app/admin/mcp-servers';
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

type Posted = { Body: Form };
type ServerPosted = { Params: { slug: string }; Body: Form };
type ServerShown = { Params: { slug: string }; Querystring: { slug?: string } };

const proxyUrl = (ctx: ServiceContext, slug: string) => `${ctx.publicUrl}/mcp/${slug}`;

/** The names of the headers sent upstream; their values stay sealed. */
function headerNames(ctx: ServiceContext, server: McpServer): string[] {
  try {
    return Object.keys(JSON.parse(ctx.sealer.open(server.headersSealed)) as Record<string, string>);
  } catch {
    return [];
  }
}

const notFound = (reply: FastifyReply, session: AppSession) =>
  problemPage(reply, 404, 'Not found', 'No MCP server of that slug in this workspace.', session);

const serverOf = (ctx: ServiceContext, session: AppSession, slug: string) =>
  SLUG.test(slug) ? mcpServerOf(ctx, session.workspace.id, slug) : Promise.resolve(null);

async function listPage(
  ctx: ServiceContext,
  session: AppSession,
  options: {
    notice?: string | null;
    problems?: string[];
    form?: { values: ServerFormValues; errors: FieldErrors };
    tested?: { slug: string; result: McpConnectionTest };
  } = {},
) {
  const version = await currentConfigVersion(ctx, session.workspace);
  const servers = await mcpServersOf(ctx, session.workspace.id);
  const tools = await toolsOf(ctx, session.workspace.id);
  const cards = servers.map((server): ServerCard => ({
    server,
    headerNames: headerNames(ctx, server),
    proxyUrl: proxyUrl(ctx, server.slug),
    oauthUrl: mcpResourceUrl(ctx, session.workspace.slug, server.slug),
    tools: tools.filter((tool) => tool.connection === server.name),
    tested: options.tested?.slug === server.slug ? options.tested.result : null,
  }));
  const body = serverListBody(session, {
    version,
    cards,
    form: options.form ?? { values: blankServer(version), errors: {} },
    problems: options.problems ?? [],
  });
  return adminPage(ctx, session, { title: 'MCP servers', active: 'mcp', notice: options.notice }, body);
}

const editPage = (
  ctx: ServiceContext,
  session: AppSession,
  values: ServerFormValues,
  errors: FieldErrors,
  problems: string[],
) =>
  adminPage(
    ctx,
    session,
    { title: 'Edit MCP server', active: 'mcp' },
    serverEditBody(session, values, errors, problems),
  );

async function editForm(ctx: ServiceContext, request: FastifyRequest<ServerShown>, reply: FastifyReply) {
  const session = request.appSession!;
  const { slug } = request.params;
  // The edit form's address before servers had their own (`/edit?slug=`), kept for bookmarks.
  if (slug === 'edit' && request.query.slug !== undefined)
    return reply.redirect(serverPath(request.query.slug), 301);
  const version = await currentConfigVersion(ctx, session.workspace);
  const server = await serverOf(ctx, session, slug);
  if (!server) return notFound(reply, session);
  const values: ServerFormValues = {
    ...blankServer(version),
    editing: true,
    slug: server.slug,
    name: server.name,
    url: server.url,
    callTimeout: String(server.callTimeoutSeconds),
    stored: headerNames(ctx, server),
  };
  return sendPage(reply, await editPage(ctx, session, values, {}, []));
}

/** Registers a server (no `slug`) or saves the one of `slug`, from the posted form. */
async function save(
  ctx: ServiceContext,
  request: FastifyRequest<Posted>,
  reply: FastifyReply,
  slug?: string,
) {
  const session = request.appSession!;
  const { body } = request;
  const adding = slug === undefined;
  const readAt = readAtOf(body);
  const servers = (await currentConfig(ctx, session)).mcp_servers ?? [];
  let stored: string[] = [];
  if (!adding) {
    const server = servers.some((s) => s.slug === slug) ? await serverOf(ctx, session, slug) : null;
    if (!server) return notFound(reply, session);
    stored = headerNames(ctx, server);
  }
  const refused = async (fieldErrors: FieldErrors, problems: string[]) => {
    const values = { ...typedServer(body, slug), editing: !adding, stored, version: readAt };
    const errors = refusedErrors(body, fieldErrors);
    const summary = formProblems(errors, problems);
    const page = adding
      ? listPage(ctx, session, { form: { values, errors }, problems: summary })
      : editPage(ctx, session, values, errors, summary);
    return sendPage(reply, await page, 422);
  };

  const parsed = parseServerForm(body, slug);
  const errors = {
    ...(parsed.ok ? {} : parsed.errors),
    ...conflicts(servers, typedServer(body, slug), adding),
  };
  if (!parsed.ok || Object.keys(errors).length > 0) return refused(errors, []);

  // The change to the servers as they are when it is applied: this one added or updated, the rest kept.
  let now: ServerEntry[] = [];
  let index = -1;
  const issues = await applyChange(ctx, session, readAt, (current) => {
    now = [...(current.mcp_servers ?? [])];
    index = now.findIndex((server) => server.slug === parsed.value.slug);
    if (index < 0) index = now.length;
    now[index] = serverEntry(parsed.value, adding ? undefined : now[index]);
    return { mcp_servers: now };
  });
  if (issues) {
    const others = attachIssues(issues, `mcp_servers.${index}`, errors);
    return refused(
      errors,
      others.map((issue) => describeIssue(issue, { mcp_servers: now })),
    );
  }
  return redirectWithNotice(reply, LIST, adding ? 'registered' : 'updated');
}

async function remove(ctx: ServiceContext, request: FastifyRequest<ServerPosted>, reply: FastifyReply) {
  const session = request.appSession!;
  const { slug } = request.params;
  const servers = (await currentConfig(ctx, session)).mcp_servers ?? [];
  const server = servers.find((s) => s.slug === slug);
  if (!server) return notFound(reply, session);
  if (field(request.body, 'confirm') !== 'yes') {
    const body = confirmCard(session, {
      title: 'Remove this MCP server?',
      message: removeQuestion(server.name, proxyUrl(ctx, server.slug)),
      action: `${serverPath(slug)}/delete`,
      fields: versionPassedOn(request.body),
      button: 'Remove server',
      back: LIST,
    });
    return sendPage(
      reply,
      await adminPage(ctx, session, { title: 'Remove MCP server', active: 'mcp' }, body),
    );
  }
  let now: ServerEntry[] = [];
  const issues = await applyChange(ctx, session, readAtOf(request.body), (current) => {
    now = (current.mcp_servers ?? []).filter((s) => s.slug !== slug);
    return { mcp_servers: now };
  });
  if (issues) {
    const problems = issues.map((issue) => describeIssue(issue, { mcp_servers: now }));
    return sendPage(reply, await listPage(ctx, session, { problems }), 422);
  }
  return redirectWithNotice(reply, LIST, 'removed');
}

export function mcpServerPages(app: FastifyInstance, { ctx, testMcpConnection }: PageDeps) {
  app.get(LIST, ADMIN, async (request, reply) => {
    const notice = SERVER_NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    return sendPage(reply, await listPage(ctx, request.appSession!, { notice }));
  });
  app.post<Posted>(LIST, ADMIN, (request, reply) => save(ctx, request, reply));
  app.get<ServerShown>(`${LIST}/:slug`, ADMIN, (request, reply) => editForm(ctx, request, reply));
  app.post<ServerPosted>(`${LIST}/:slug`, ADMIN, (request, reply) =>
    save(ctx, request, reply, request.params.slug),
  );
  app.post<ServerPosted>(`${LIST}/:slug/test`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const { slug } = request.params;
    const server = await serverOf(ctx, session, slug);
    if (!server) return notFound(reply, session);
    const result = await testMcpConnection(ctx, server);
    return sendPage(reply, await listPage(ctx, session, { tested: { slug, result } }));
  });
  app.post<ServerPosted>(`${LIST}/:slug/delete`, ADMIN, (request, reply) => remove(ctx, request, reply));
}
