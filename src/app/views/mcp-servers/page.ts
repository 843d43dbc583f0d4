/** The MCP servers pages' bodies: the list with the registration form, and one server's edit form. */
import type { AppSession } from '../../../services/sign-in.ts';
import type { FieldErrors } from '../../forms/form.ts';
import { type Html, html } from '../../html.ts';
import { issueSummary } from '../form-fields.ts';
import { type ServerCard, serverCard } from './card.ts';
import { serverForm, type ServerFormValues } from './form.ts';

/** What a flash notice says on the list, by its key. */
export const SERVER_NOTICES: Record<string, string> = {
  registered: 'MCP server registered. Agents reach it through its proxy URL with an API key.',
  updated: 'MCP server updated. New connections use the new settings.',
  removed: 'MCP server removed. Its proxy URL refuses agents from now on.',
};

const LABELS: Record<string, string> = {
  slug: 'Slug',
  name: 'Name',
  url: 'Upstream URL',
  headers: 'Headers',
  call_timeout_seconds: 'Call timeout',
};

/** A refused form's problems, listed above it: its fields' errors by label, then the others. */
export const formProblems = (errors: FieldErrors, problems: string[]) => [
  ...Object.entries(errors).map(([key, message]) => `${LABELS[key] ?? key}: ${message}`),
  ...problems,
];

export interface ServerList {
  version: number;
  cards: ServerCard[];
  /** The registration form (blank, or refused with its errors). */
  form: { values: ServerFormValues; errors: FieldErrors };
  problems: string[];
}

export function serverListBody(session: AppSession, list: ServerList): Html {
  return html`<h1>MCP servers</h1>
    ${issueSummary(list.problems)}
    <p class="muted">
      Agents connect to an MCP server through its proxy URL, with an API key as
      <code>Authorization: Bearer …</code>. Every tool call then follows the rules: allowed calls go upstream
      at once, held calls wait for a decision, denied calls are refused. The agent's key never goes upstream;
      the headers stored here do.
    </p>
    ${
      list.cards.length === 0
        ? html`<p class="empty card">No MCP servers yet. Register one below.</p>`
        : list.cards.map((card) => serverCard(session, list.version, card))
    }
    <section class="card" aria-labelledby="new-server">
      <h2 id="new-server">Register a server</h2>
      ${serverForm(session, list.form.values, list.form.errors)}
    </section>`;
}

export function serverEditBody(
  session: AppSession,
  values: ServerFormValues,
  errors: FieldErrors,
  problems: string[],
): Html {
  return html`<p><a href="/app/admin/mcp-servers">← MCP servers</a></p>
    <h1>Edit MCP server “${values.slug}”</h1>
    ${issueSummary(problems)}
    <div class="card">${serverForm(session, values, errors)}</div>`;
}

/** The question before a server is removed. */
export const removeQuestion = (name: string, proxyUrl: string) =>
  html`“${name}” (<code>${proxyUrl}</code>). Agents using its proxy URL are refused from now on, and its
  stored headers are no longer used. Its tools keep their classifications, and rules that name it stay.`;
