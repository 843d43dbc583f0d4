/**
 * MCP servers: the upstreams agents reach through `{PUBLIC_URL}/mcp/<slug>`. Register, edit and remove
 * them (through `applyConfig`, like `approvals apply`), test a connection, and see the tools each one
 * listed. Header values are credentials: sealed in the database and never shown again, in any page.
 */
import type { FastifyInstance } from 'fastify';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import type { ServiceContext } from '../../../services/context.ts';
import { mcpResourceUrl } from '../../../services/oauth.ts';
import type { FieldIssue } from '../../../services/errors.ts';
import { currentConfigVersion } from '../../../services/apply-config.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { type McpConnectionTest, mcpServerOf, mcpServersOf } from '../../../services/mcp-servers.ts';
import { toolsOf } from '../../../services/classify-tool.ts';
import { DEFAULT_CALL_TIMEOUT_SECONDS, MAX_CALL_TIMEOUT_SECONDS } from '../../../domain/mcp-servers.ts';
import type { McpServer } from '../../../store/mcp-servers.ts';
import type { Tool } from '../../../store/tools.ts';
import { type Html, html, time, when } from '../../html.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  checked,
  configFields,
  confirmCard,
  currentConfig,
  describedBy,
  fieldError,
  inputField,
  issueSummary,
  readAtOf,
  versionPassedOn,
} from './shared.ts';

type ServerEntry = NonNullable<WorkspaceConfig['mcp_servers']>[number];

const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** The whole test: connecting (the pool's own limit) and then listing every page of tools. */
const DESCRIPTION_SHOWN = 160;
const FIELDS = ['slug', 'name', 'url', 'headers', 'call_timeout_seconds'] as const;
const LABELS: Record<string, string> = {
  slug: 'Slug',
  name: 'Name',
  url: 'Upstream URL',
  headers: 'Headers',
  call_timeout_seconds: 'Call timeout',
};
const CALL_TIMEOUT_ERROR = `Must be a whole number of seconds from 1 to ${MAX_CALL_TIMEOUT_SECONDS}.`;

/** 900 → "15 minutes", 45 → "45 seconds", 7200 → "2 hours". */
function durationText(seconds: number): string {
  const [count, unit] =
    seconds % 3600 === 0
      ? [seconds / 3600, 'hour']
      : seconds % 60 === 0
        ? [seconds / 60, 'minute']
        : [seconds, 'second'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

const NOTICES: Record<string, string> = {
  registered: 'MCP server registered. Agents reach it through its proxy URL with an API key.',
  updated: 'MCP server updated. New connections use the new settings.',
  removed: 'MCP server removed. Its proxy URL refuses agents from now on.',
};

interface ServerValues {
  mode: 'add' | 'edit';
  slug: string;
  name: string;
  url: string;
  /** Whether header lines were typed: they are never sent back to the browser. */
  headersTyped: boolean;
  /** The call timeout in seconds as typed (empty: the default). */
  callTimeout: string;
  /** The names of the stored headers (edit only). */
  stored: string[];
  clear: boolean;
  /** The configuration's version the form was read at (none: a form from before versions). */
  version: number | undefined;
}

const blankServer: ServerValues = {
  mode: 'add',
  slug: '',
  name: '',
  url: '',
  headersTyped: false,
  callTimeout: '',
  stored: [],
  clear: false,
  version: 0,
};

const proxyUrl = (ctx: ServiceContext, slug: string) => `${ctx.publicUrl}/mcp/${slug}`;

/** The names of the headers sent upstream; their values stay sealed. */
function headerNames(ctx: ServiceContext, server: McpServer): string[] {
  try {
    return Object.keys(JSON.parse(ctx.sealer.open(server.headersSealed)) as Record<string, string>);
  } catch {
    return [];
  }
}

/** "Name: value" lines; an empty text is no headers. */
export function parseHeaderLines(text: string): { headers: Record<string, string> } | { error: string } {
  const headers: Record<string, string> = {};
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    if (!line.trim()) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : line.slice(0, colon).trim();
    if (!name) return { error: `Line ${index + 1}: write each header as Name: value.` };
    if (!/^[A-Za-z0-9-]{1,100}$/.test(name))
      return { error: `Line ${index + 1}: a header name has only letters, digits and dashes.` };
    if (seen.has(name.toLowerCase())) return { error: `Line ${index + 1}: ${name} is given twice.` };
    seen.add(name.toLowerCase());
    headers[name] = line.slice(colon + 1).trim();
  }
  return { headers };
}

const classificationBadge = (classification: string) =>
  classification === 'new'
    ? html`<span class="status">new</span>`
    : html`<span
        class="status ${{ allow: 'approved', approval: 'pending', deny: 'rejected' }[classification] ?? ''}"
        >${classification}</span
      >`;

function describeTool(tool: Tool): string | null {
  const description = tool.definition?.description;
  if (typeof description !== 'string' || !description.trim()) return null;
  const text = description.trim().replace(/\s+/g, ' ');
  return text.length > DESCRIPTION_SHOWN ? `${text.slice(0, DESCRIPTION_SHOWN - 1)}…` : text;
}

function toolTable(server: McpServer, tools: Tool[]): Html {
  const fresh = tools.filter((tool) => tool.classification === 'new').length;
  return html`<h3 id="tools-${server.slug}">Discovered tools <span class="badge">${tools.length}</span></h3>
    ${
      tools.length === 0
        ? html`<p class="muted">
            None yet. Tools are registered (as <em>new</em>) when an agent lists them through the proxy URL.
          </p>`
        : html`${when(
              fresh > 0,
              () =>
                html`<p>
                  ${fresh} ${fresh === 1 ? 'tool is' : 'tools are'} <em>new</em>: every call waits for an
                  admin until you
                  <a href="/app/admin/rules#classify"
                    >classify ${fresh === 1 ? 'it' : 'them'} on the Rules page</a
                  >.
                </p>`,
            )}
            <table class="responsive tools">
              <thead>
                <tr>
                  <th>Tool</th>
                  <th>First called</th>
                  <th>Classification</th>
                </tr>
              </thead>
              <tbody>
                ${tools.map((tool) => {
                  const description = describeTool(tool);
                  return html`<tr>
                    <td>
                      <code>${tool.name}</code
                      >${when(description, () => html`<br /><span class="muted">${description}</span>`)}
                    </td>
                    <td data-label="First called">
                      ${tool.firstSeenAt === null ? html`<span class="muted">not yet</span>` : time(tool.firstSeenAt)}
                    </td>
                    <td data-label="Classification">
                      ${classificationBadge(tool.classification)}
                      ${when(
                        tool.classification === 'new',
                        () =>
                          html`<a href="/app/admin/rules#classify"
                            >classify<span class="visually-hidden"> ${tool.name}</span></a
                          >`,
                      )}
                    </td>
                  </tr>`;
                })}
              </tbody>
            </table>`
    }`;
}

function testResult(result: McpConnectionTest): Html {
  if (!result.ok) {
    return html`<div class="error" role="alert" id="test-result">
      <p><strong>Connection failed.</strong> ${result.message}</p>
    </div>`;
  }
  const count = result.tools.length;
  return html`<div class="notice" role="status" id="test-result">
    <p>
      <strong>Connected.</strong> The server lists ${count} ${count === 1 ? 'tool' : 'tools'}.
      ${when(count > 0, () => html`Agents see them (and <code>service_check_status</code>) through the proxy.`)}
    </p>
    ${when(
      count > 0,
      () =>
        html`<details>
          <summary>Tool names</summary>
          <p>${result.tools.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}</code>`)}</p>
        </details>`,
    )}
  </div>`;
}

function serverCard(
  ctx: ServiceContext,
  session: AppSession,
  version: number,
  server: McpServer,
  tools: Tool[],
  result: McpConnectionTest | null,
): Html {
  const names = headerNames(ctx, server);
  const id = `server-${server.slug}`;
  return html`<section class="card server" id="${id}" aria-labelledby="${id}-name">
    <div class="heading">
      <h2 id="${id}-name">${server.name}</h2>
      <div class="row actions">
        <form method="post" action="/app/admin/mcp-servers/test">
          ${configFields(session, version)}
          <input type="hidden" name="slug" value="${server.slug}" />
          <button type="submit" class="secondary">
            Test connection<span class="visually-hidden"> to ${server.name}</span>
          </button>
        </form>
        <a class="button secondary" href="/app/admin/mcp-servers/edit?slug=${server.slug}"
          >Edit<span class="visually-hidden"> ${server.name}</span></a
        >
        <form method="post" action="/app/admin/mcp-servers/remove">
          ${configFields(session, version)}
          <input type="hidden" name="slug" value="${server.slug}" />
          <button type="submit" class="link">
            Remove<span class="visually-hidden"> ${server.name}</span>…
          </button>
        </form>
      </div>
    </div>
    ${when(result, () => testResult(result!))}
    <dl class="facts">
      <dt>Proxy URL</dt>
      <dd>
        <code class="url">${proxyUrl(ctx, server.slug)}</code> <span class="muted">(with an API key)</span>
      </dd>
      <dt>URL for OAuth clients</dt>
      <dd>
        <code class="url">${mcpResourceUrl(ctx, session.workspace.slug, server.slug)}</code>
        <span class="muted"
          >(hosted assistants' connectors and desktop apps: no key to paste, a member allows them)</span
        >
      </dd>
      <dt>Upstream URL</dt>
      <dd><code class="url">${server.url}</code></dd>
      <dt>Slug</dt>
      <dd><code>${server.slug}</code></dd>
      <dt>Connection</dt>
      <dd>${server.name} <span class="muted">(the name rules use)</span></dd>
      <dt>Headers</dt>
      <dd>
        ${
          names.length === 0
            ? html`<span class="muted">none</span>`
            : html`${names.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}</code>`)}
                <span class="muted">(values stored encrypted, never shown)</span>`
        }
      </dd>
      <dt>Call timeout</dt>
      <dd>
        ${durationText(server.callTimeoutSeconds)}${
          server.callTimeoutSeconds === DEFAULT_CALL_TIMEOUT_SECONDS
            ? html` <span class="muted">(the default)</span>`
            : null
        }
        <span class="muted">without an answer or progress from the server</span>
      </dd>
    </dl>
    ${toolTable(server, tools)}
  </section>`;
}

function serverForm(session: AppSession, values: ServerValues, errors: Record<string, string>): Html {
  const edit = values.mode === 'edit';
  const input = (name: 'slug' | 'name' | 'url', label: Html | string, extra: Html | null) =>
    inputField({
      id: `s-${name}`,
      name,
      label,
      type: name === 'url' ? 'url' : 'text',
      value: values[name],
      error: errors[name],
      extra,
    });
  return html`<form method="post" action="/app/admin/mcp-servers/save" class="decide">
    ${configFields(session, values.version)}
    <input type="hidden" name="mode" value="${values.mode}" />
    ${
      edit
        ? html`<input type="hidden" name="slug" value="${values.slug}" />
            <p style="margin:0"><strong>Slug</strong><br /><code>${values.slug}</code></p>
            ${fieldError('s-slug', errors.slug)}`
        : input(
            'slug',
            html`Slug
              <span class="muted"
                >(lowercase letters, digits and dashes; the end of the proxy URL; fixed once registered)</span
              >`,
            html`required maxlength="63" pattern="[a-z0-9]([a-z0-9-]*[a-z0-9])?" placeholder="files"
            autocomplete="off" spellcheck="false"`,
          )
    }
    ${input(
      'name',
      html`Name <span class="muted">(the connection name rules and tool classifications use)</span>`,
      html`required maxlength="200" placeholder="Files" autocomplete="off"`,
    )}
    ${when(
      edit,
      () =>
        html`<p class="muted" style="margin:0">
          Renaming changes the connection: rules and classifications that name the old one no longer match,
          and its tools are <em>new</em> again under the new name.
        </p>`,
    )}
    ${input(
      'url',
      html`Upstream URL <span class="muted">(its streamable HTTP endpoint, http or https)</span>`,
      html`required maxlength="2000" placeholder="https://mcp.example.com/mcp" autocomplete="off"
      spellcheck="false"`,
    )}
    ${when(
      edit,
      () =>
        html`<p class="muted" id="s-url-note" style="margin:0">
          A URL on another origin (scheme, host or port) drops the stored headers: they were given for this
          one. Type them again below to send them to the new one.
        </p>`,
    )}
    <label for="s-headers"
      >Headers sent upstream
      <span class="muted"
        >(optional; one <code>Name: value</code> per line, like <code>Authorization: Bearer …</code>)</span
      ></label
    >
    <textarea
      id="s-headers"
      name="headers"
      rows="3"
      autocomplete="off"
      spellcheck="false"
      placeholder="${edit ? 'Leave empty to keep the stored headers' : 'Authorization: Bearer …'}"
      ${describedBy('s-headers', errors.headers)}
    ></textarea>
    ${fieldError('s-headers', errors.headers)}
    <p class="muted" style="margin:0">
      Stored encrypted and never shown again, not even here.
      ${
        edit
          ? html`Stored now:
            ${values.stored.length === 0 ? 'none' : values.stored.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}</code>`)}.
            Typed headers replace the stored ones; leave the box empty to keep them (on the same origin).`
          : null
      }
    </p>
    ${when(
      edit,
      () =>
        html`<label class="choice"
          ><input type="checkbox" name="clear_headers" value="yes" ${checked(values.clear)} /> Remove the
          stored headers (send none)</label
        >`,
    )}
    <label for="s-call_timeout_seconds"
      >Call timeout in seconds
      <span class="muted"
        >(optional; default ${DEFAULT_CALL_TIMEOUT_SECONDS}, ${durationText(DEFAULT_CALL_TIMEOUT_SECONDS)}; 1
        to ${MAX_CALL_TIMEOUT_SECONDS})</span
      ></label
    >
    <input
      id="s-call_timeout_seconds"
      name="call_timeout_seconds"
      type="number"
      min="1"
      max="${MAX_CALL_TIMEOUT_SECONDS}"
      step="1"
      inputmode="numeric"
      value="${values.callTimeout}"
      placeholder="${DEFAULT_CALL_TIMEOUT_SECONDS}"
      aria-describedby="s-call_timeout_seconds-note${errors.call_timeout_seconds ? ' s-call_timeout_seconds-error' : ''}"
      ${errors.call_timeout_seconds ? html` aria-invalid="true"` : null}
    />
    ${fieldError('s-call_timeout_seconds', errors.call_timeout_seconds)}
    <p class="muted" id="s-call_timeout_seconds-note" style="margin:0">
      How long a tool call, allowed or approved, may wait for the server's answer. Progress the server reports
      starts the clock again. A call that times out is not run again: an approved one is marked “outcome
      unknown” and its approvers are told.
    </p>
    <div class="buttons">
      <button type="submit">${edit ? 'Save changes' : 'Register server'}</button>
      ${when(edit, () => html`<a class="button secondary" href="/app/admin/mcp-servers">Cancel</a>`)}
    </div>
  </form>`;
}

function valuesOfForm(body: Form): ServerValues {
  return {
    mode: field(body, 'mode') === 'edit' ? 'edit' : 'add',
    slug: field(body, 'slug'),
    name: field(body, 'name'),
    url: field(body, 'url'),
    headersTyped: field(body, 'headers') !== '',
    callTimeout: field(body, 'call_timeout_seconds').trim(),
    stored: [],
    clear: field(body, 'clear_headers') === 'yes',
    version: readAtOf(body),
  };
}

export function mcpServerPages(app: FastifyInstance, { ctx, testMcpConnection }: PageDeps) {
  const listPage = async (
    session: AppSession,
    options: {
      notice?: string | null;
      problems?: string[];
      values?: ServerValues;
      errors?: Record<string, string>;
      tested?: { slug: string; result: McpConnectionTest };
    } = {},
  ) => {
    const version = await currentConfigVersion(ctx, session.workspace);
    const servers = await mcpServersOf(ctx, session.workspace.id);
    const tools = await toolsOf(ctx, session.workspace.id);
    const body = html`<h1>MCP servers</h1>
      ${issueSummary(options.problems ?? [])}
      <p class="muted">
        Agents connect to an MCP server through its proxy URL, with an API key as
        <code>Authorization: Bearer …</code>. Every tool call then follows the rules: allowed calls go
        upstream at once, held calls wait for a decision, denied calls are refused. The agent's key never goes
        upstream; the headers stored here do.
      </p>
      ${
        servers.length === 0
          ? html`<p class="empty card">No MCP servers yet. Register one below.</p>`
          : servers.map((server) =>
              serverCard(
                ctx,
                session,
                version,
                server,
                tools.filter((tool) => tool.connection === server.name),
                options.tested?.slug === server.slug ? options.tested.result : null,
              ),
            )
      }
      <section class="card" aria-labelledby="new-server">
        <h2 id="new-server">Register a server</h2>
        ${serverForm(session, options.values ?? { ...blankServer, version }, options.errors ?? {})}
      </section>`;
    return adminPage(ctx, session, { title: 'MCP servers', active: 'mcp', notice: options.notice }, body);
  };

  const editPage = async (
    session: AppSession,
    values: ServerValues,
    options: { errors?: Record<string, string>; problems?: string[] } = {},
  ) => {
    const body = html`<p><a href="/app/admin/mcp-servers">← MCP servers</a></p>
      <h1>Edit MCP server “${values.slug}”</h1>
      ${issueSummary(options.problems ?? [])}
      <div class="card">${serverForm(session, values, options.errors ?? {})}</div>`;
    return adminPage(ctx, session, { title: 'Edit MCP server', active: 'mcp' }, body);
  };

  /** A refused form again, its errors next to the fields and listed above it. */
  const formPage = (
    session: AppSession,
    values: ServerValues,
    errors: Record<string, string>,
    problems: string[],
  ) => {
    const summary = [
      ...Object.entries(errors).map(([key, message]) => `${LABELS[key] ?? key}: ${message}`),
      ...problems,
    ];
    return values.mode === 'edit'
      ? editPage(session, values, { errors, problems: summary })
      : listPage(session, { values, errors, problems: summary });
  };

  app.get<{ Querystring: { notice?: string } }>('/app/admin/mcp-servers', ADMIN, async (request, reply) => {
    const notice = NOTICES[request.query.notice ?? ''] ?? null;
    return sendPage(reply, await listPage(request.appSession!, { notice }));
  });

  app.get<{ Querystring: { slug?: string } }>(
    '/app/admin/mcp-servers/edit',
    ADMIN,
    async (request, reply) => {
      const session = request.appSession!;
      const slug = request.query.slug ?? '';
      const version = await currentConfigVersion(ctx, session.workspace);
      const server = SLUG.test(slug) ? await mcpServerOf(ctx, session.workspace.id, slug) : null;
      if (!server)
        return problemPage(reply, 404, 'Not found', 'No MCP server of that slug in this workspace.', session);
      return sendPage(
        reply,
        await editPage(session, {
          ...blankServer,
          version,
          mode: 'edit',
          slug: server.slug,
          name: server.name,
          url: server.url,
          callTimeout: String(server.callTimeoutSeconds),
          stored: headerNames(ctx, server),
        }),
      );
    },
  );

  app.post<{ Body: Form }>('/app/admin/mcp-servers/save', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const values = valuesOfForm(request.body);
    const errors: Record<string, string> = {};
    const problems: string[] = [];
    const refused = async () => {
      // Typed header values are never sent back: the form asks for them again.
      if (values.headersTyped && !errors.headers)
        errors.headers = 'Type the headers again: their values are never sent back to a page.';
      return sendPage(reply, await formPage(session, values, errors, problems), 422);
    };

    const parsed = parseHeaderLines(typeof request.body?.headers === 'string' ? request.body.headers : '');
    if ('error' in parsed) errors.headers = parsed.error;
    // Empty: the default. Out of bounds is for the file's check to say (its words, next to the field).
    if (values.callTimeout !== '' && !/^\d{1,9}$/.test(values.callTimeout))
      errors.call_timeout_seconds = CALL_TIMEOUT_ERROR;
    const servers = (await currentConfig(ctx, session)).mcp_servers ?? [];
    let index = servers.findIndex((server) => server.slug === values.slug);
    if (values.mode === 'add' && index >= 0) {
      errors.slug = 'Is already registered: edit that server instead, or choose another slug.';
    }
    const namesake = servers.find((server) => server.name === values.name && server.slug !== values.slug);
    if (namesake) {
      errors.name = `Is the name of server “${namesake.slug}”: each server needs a connection name of its own.`;
    }
    if (values.mode === 'edit') {
      const stored = index < 0 ? null : await mcpServerOf(ctx, session.workspace.id, values.slug);
      if (!stored)
        return problemPage(reply, 404, 'Not found', 'No MCP server of that slug in this workspace.', session);
      values.stored = headerNames(ctx, stored);
    }
    if (Object.keys(errors).length > 0) return refused();

    const headers = 'headers' in parsed ? parsed.headers : {};
    const entry: ServerEntry = { slug: values.slug, name: values.name, url: values.url };
    if (values.callTimeout !== '') entry.call_timeout_seconds = Number(values.callTimeout);
    // A new registration never inherits the headers of a removed server of the same slug.
    if (values.mode === 'add' || Object.keys(headers).length > 0 || values.clear) entry.headers = headers;
    if (index < 0) index = servers.length;
    const list = [...servers];
    list[index] = entry;

    // The same change to the servers as they are now: this one added or replaced, the rest kept.
    const issues = await applyChange(ctx, session, values.version, (now) => {
      const registered = [...(now.mcp_servers ?? [])];
      const found = registered.findIndex((server) => server.slug === values.slug);
      index = found >= 0 ? found : registered.length;
      registered[index] = entry;
      list.splice(0, list.length, ...registered);
      return { mcp_servers: registered };
    });
    if (issues) {
      takeIssues(issues, index, list, errors, problems);
      return refused();
    }
    return reply.redirect(
      `/app/admin/mcp-servers?notice=${values.mode === 'add' ? 'registered' : 'updated'}`,
      303,
    );
  });

  app.post<{ Body: Form }>('/app/admin/mcp-servers/test', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const slug = field(request.body, 'slug');
    const server = SLUG.test(slug) ? await mcpServerOf(ctx, session.workspace.id, slug) : null;
    if (!server)
      return problemPage(reply, 404, 'Not found', 'No MCP server of that slug in this workspace.', session);
    const result = await testMcpConnection(ctx, server);
    return sendPage(reply, await listPage(session, { tested: { slug, result } }));
  });

  app.post<{ Body: Form }>('/app/admin/mcp-servers/remove', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const slug = field(request.body, 'slug');
    const servers = (await currentConfig(ctx, session)).mcp_servers ?? [];
    const server = servers.find((s) => s.slug === slug);
    if (!server)
      return problemPage(reply, 404, 'Not found', 'No MCP server of that slug in this workspace.', session);
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Remove this MCP server?',
        message: html`“${server.name}” (<code>${proxyUrl(ctx, server.slug)}</code>). Agents using its proxy
        URL are refused from now on, and its stored headers are no longer used. Its tools keep their
        classifications, and rules that name it stay.`,
        action: '/app/admin/mcp-servers/remove',
        fields: { slug: server.slug, ...versionPassedOn(request.body) },
        button: 'Remove server',
        back: '/app/admin/mcp-servers',
      });
      return sendPage(
        reply,
        await adminPage(ctx, session, { title: 'Remove MCP server', active: 'mcp' }, body),
      );
    }
    const list = servers.filter((s) => s.slug !== slug);
    const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
      mcp_servers: (now.mcp_servers ?? []).filter((s) => s.slug !== slug),
    }));
    if (issues) {
      const problems: string[] = [];
      takeIssues(issues, -1, list, {}, problems);
      return sendPage(reply, await listPage(session, { problems }), 422);
    }
    return reply.redirect('/app/admin/mcp-servers?notice=removed', 303);
  });
}

/** Issues about the edited server become field errors; others name the server they are about. */
function takeIssues(
  issues: FieldIssue[],
  index: number,
  list: ServerEntry[],
  errors: Record<string, string>,
  problems: string[],
) {
  for (const issue of issues) {
    const [part, at, key] = issue.field.split('.');
    const own = part === 'mcp_servers' && Number(at) === index;
    if (own && key && (FIELDS as readonly string[]).includes(key)) {
      errors[key] ??= issue.message;
    } else if (part === 'mcp_servers' && at !== undefined && list[Number(at)]) {
      const other = list[Number(at)]!;
      problems.push(`Server “${other.slug}”${key ? `, ${key}` : ''}: ${issue.message}`);
    } else {
      problems.push(
        `${issue.field === '(change)' || issue.field === '(file)' ? '' : `${issue.field}: `}${issue.message}`,
      );
    }
  }
}
