/**
 * One registered MCP server as the list shows it: its URLs, its headers' names (never their values),
 * its call timeout, the tools agents listed through it, and the result of a connection test just run.
 */
import { DEFAULT_CALL_TIMEOUT_SECONDS } from '../../../domain/mcp-servers.ts';
import type { McpConnectionTest } from '../../../services/mcp-servers.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import type { McpServer } from '../../../store/mcp-servers.ts';
import type { Tool } from '../../../store/tools.ts';
import { type Html, html, time, when } from '../../html.ts';
import { configFields } from '../form-fields.ts';

const DESCRIPTION_SHOWN = 160;

export interface ServerCard {
  server: McpServer;
  /** The names of the headers sent upstream; their values stay sealed. */
  headerNames: string[];
  /** Where agents reach it with an API key, and where OAuth clients do. */
  proxyUrl: string;
  oauthUrl: string;
  tools: Tool[];
  /** The connection test just run on it, if any. */
  tested: McpConnectionTest | null;
}

export const serverPath = (slug: string) => `/app/admin/mcp-servers/${encodeURIComponent(slug)}`;

/** 900 → "15 minutes", 45 → "45 seconds", 7200 → "2 hours". */
export function durationText(seconds: number): string {
  const [count, unit] =
    seconds % 3600 === 0
      ? [seconds / 3600, 'hour']
      : seconds % 60 === 0
        ? [seconds / 60, 'minute']
        : [seconds, 'second'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

/** Names as `<code>` items, comma-separated. */
export const codeList = (names: readonly string[]) =>
  names.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}</code>`);

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

function toolRow(tool: Tool): Html {
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
                ${tools.map(toolRow)}
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
          <p>${codeList(result.tools)}</p>
        </details>`,
    )}
  </div>`;
}

function serverActions(session: AppSession, version: number, server: McpServer): Html {
  const path = serverPath(server.slug);
  return html`<div class="row actions">
    <form method="post" action="${path}/test">
      ${configFields(session, version)}
      <button type="submit" class="secondary">
        Test connection<span class="visually-hidden"> to ${server.name}</span>
      </button>
    </form>
    <a class="button secondary" href="${path}">Edit<span class="visually-hidden"> ${server.name}</span></a>
    <form method="post" action="${path}/delete">
      ${configFields(session, version)}
      <button type="submit" class="link">Remove<span class="visually-hidden"> ${server.name}</span>…</button>
    </form>
  </div>`;
}

function serverFacts({ server, headerNames, proxyUrl, oauthUrl }: ServerCard): Html {
  return html`<dl class="facts">
    <dt>Proxy URL</dt>
    <dd><code class="url">${proxyUrl}</code> <span class="muted">(with an API key)</span></dd>
    <dt>URL for OAuth clients</dt>
    <dd>
      <code class="url">${oauthUrl}</code>
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
        headerNames.length === 0
          ? html`<span class="muted">none</span>`
          : html`${codeList(headerNames)} <span class="muted">(values stored encrypted, never shown)</span>`
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
  </dl>`;
}

export function serverCard(session: AppSession, version: number, card: ServerCard): Html {
  const { server } = card;
  const id = `server-${server.slug}`;
  return html`<section class="card server" id="${id}" aria-labelledby="${id}-name">
    <div class="heading">
      <h2 id="${id}-name">${server.name}</h2>
      ${serverActions(session, version, server)}
    </div>
    ${when(card.tested, () => testResult(card.tested!))} ${serverFacts(card)} ${toolTable(server, card.tools)}
  </section>`;
}
