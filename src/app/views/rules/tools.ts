/**
 * Tools and their classification, on the rules page: those called but never classified first (one click
 * each), then every tool per connection; and the question asked before a new tool is allowed.
 */
import type { AppSession } from '../../../services/sign-in.ts';
import type { Tool } from '../../../store/tools.ts';
import { type Html, html, time, when } from '../../html.ts';
import { configFields, selected } from '../form-fields.ts';
import { effectBadge } from './list.ts';

/** Where a tool's classification is set: the tool is named in the form (it may not have been called yet). */
export const CLASSIFY_URL = '/app/admin/tools';
const CLASSIFICATIONS = ['allow', 'approval', 'deny'] as const;

const connectionName = (connection: string) => (connection === 'SDK' ? 'SDK (Hold API)' : connection);

const toolFields = (tool: { connection: string; name: string }) =>
  html`<input type="hidden" name="connection" value="${tool.connection}" />
    <input type="hidden" name="tool" value="${tool.name}" />`;

const byConnection = (tools: Tool[]) => {
  const groups = new Map<string, Tool[]>();
  for (const tool of tools) groups.set(tool.connection, [...(groups.get(tool.connection) ?? []), tool]);
  return [...groups];
};

function classifyButtons(session: AppSession, version: number, tool: Tool): Html {
  const prefill = new URLSearchParams({ new: '', connection: tool.connection, tool: tool.name });
  return html`<form method="post" action="${CLASSIFY_URL}" class="row">
    ${configFields(session, version)} ${toolFields(tool)}
    <button type="submit" name="classification" value="allow" class="approve" aria-label="Allow ${tool.name}">
      Allow
    </button>
    <button type="submit" name="classification" value="approval" aria-label="Needs approval: ${tool.name}">
      Needs approval
    </button>
    <button type="submit" name="classification" value="deny" class="reject" aria-label="Deny ${tool.name}">
      Deny
    </button>
    <a href="/app/admin/rules?${prefill.toString()}"
      >or write a rule<span class="visually-hidden"> for ${tool.name}</span></a
    >
  </form>`;
}

/** Tools called but never classified, with one-click classification. */
export function toClassify(session: AppSession, version: number, tools: Tool[]): Html | null {
  const fresh = tools.filter((tool) => tool.classification === 'new');
  if (fresh.length === 0) return null;
  return html`<section class="card" aria-labelledby="to-classify" id="classify">
    <h2 id="to-classify">Tools to classify first <span class="badge">${fresh.length}</span></h2>
    <p class="muted">
      These tools were called but nobody has classified them: every call of them waits for an admin until they
      are. Allow them, make every call need approval, or deny them; rules can still ask for more.
    </p>
    ${byConnection(fresh).map(
      ([connection, list]) =>
        html`<h3>${connectionName(connection)}</h3>
          <table class="responsive">
            <tbody>
              ${list.map(
                (tool) =>
                  html`<tr>
                    <td>
                      <code>${tool.name}</code><br /><span class="muted"
                        >first seen ${time(tool.firstSeenAt)}</span
                      >
                    </td>
                    <td>${classifyButtons(session, version, tool)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`,
    )}
  </section>`;
}

function toolRow(session: AppSession, version: number, tool: Tool): Html {
  return html`<tr>
    <td><code>${tool.name}</code></td>
    <td>
      ${tool.classification === 'new' ? html`<span class="status">new</span>` : effectBadge(tool.classification)}
    </td>
    <td>
      <form method="post" action="${CLASSIFY_URL}" class="row">
        ${configFields(session, version)} ${toolFields(tool)}
        <select name="classification" aria-label="Classification of ${tool.name}" class="auto">
          ${when(tool.classification === 'new', () => html`<option value="" selected>choose…</option>`)}
          ${CLASSIFICATIONS.map((c) => html`<option value="${c}" ${selected(tool.classification === c)}>${c}</option>`)}
        </select>
        <button type="submit" class="secondary">Set</button>
      </form>
    </td>
  </tr>`;
}

const preClassify = (session: AppSession, version: number) =>
  html`<details class="card">
    <summary>Classify a tool before its first call</summary>
    <form method="post" action="${CLASSIFY_URL}" class="filters">
      ${configFields(session, version)}
      <div>
        <label for="pre-connection">Connection</label>
        <input id="pre-connection" name="connection" type="text" value="SDK" required maxlength="200" />
      </div>
      <div>
        <label for="pre-tool">Tool name</label>
        <input id="pre-tool" name="tool" type="text" required maxlength="200" spellcheck="false" />
      </div>
      <div>
        <label for="pre-class">Classification</label>
        <select id="pre-class" name="classification">
          ${CLASSIFICATIONS.map((c) => html`<option value="${c}">${c}</option>`)}
        </select>
      </div>
      <div><button type="submit">Classify</button></div>
    </form>
  </details>`;

/** Every tool seen or classified, per connection, with its classification (changeable). */
export function allTools(session: AppSession, version: number, tools: Tool[]): Html {
  return html`<h2 id="tools">Tools</h2>
    <p class="muted">
      A tool's classification acts as a rule that matches every call of it. A tool nobody has classified is
      <em>new</em> and needs an admin's approval.
    </p>
    ${
      tools.length === 0
        ? html`<p class="empty card">No tool has been called or classified yet.</p>`
        : byConnection(tools).map(
            ([connection, list]) =>
              html`<section class="card">
                <h3>${connectionName(connection)}</h3>
                <table class="responsive">
                  <thead>
                    <tr>
                      <th>Tool</th>
                      <th>Classification</th>
                      <th>Change</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${list.map((tool) => toolRow(session, version, tool))}
                  </tbody>
                </table>
              </section>`,
          )
    }
    ${preClassify(session, version)}`;
}

/** Before a new tool is allowed: what that means, and whether to approve the calls of it that wait. */
export function confirmAllow(
  session: AppSession,
  tool: { connection: string; name: string },
  waiting: number,
  version: number | undefined,
): Html {
  return html`<h1>Allow ${tool.name}?</h1>
    <form method="post" action="${CLASSIFY_URL}" class="card">
      ${configFields(session, version)} ${toolFields(tool)}
      <input type="hidden" name="classification" value="allow" />
      <input type="hidden" name="confirmed" value="yes" />
      <p>
        Every call of <code>${tool.name}</code> on <strong>${tool.connection}</strong> will then run at once,
        without anyone seeing it, unless a rule holds or denies it.
      </p>
      ${when(
        waiting > 0,
        () =>
          html`<p>
            <input type="checkbox" id="approve-waiting" name="approve_waiting" value="yes" />
            <label for="approve-waiting"
              >Also approve the ${waiting} ${waiting === 1 ? 'call' : 'calls'} of it waiting now, as you
              (holds that need more approvers keep waiting for them)</label
            >
          </p>`,
      )}
      <div class="buttons">
        <button type="submit" class="approve">Allow ${tool.name}</button>
        <a href="/app/admin/rules">Cancel</a>
      </div>
    </form>`;
}
