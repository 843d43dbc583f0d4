/**
 * Which waiting holds an inbox list shows: its filters, and the search, which also looks into the
 * arguments (`q=Globex`, `q=IBAN`). The arguments are searched by the database, the rest here.
 */
import { compileGlob } from '../domain/rules.ts';
import type { Db } from '../store/db.ts';
import { type HoldLine, pendingIdsContaining } from '../store/hold-lines.ts';

export interface InboxFilters {
  /** Part of the tool's name, any case (`refund`); a glob when it has `*` or `?` (`payments.*`). */
  tool?: string;
  connection?: string;
  /** Part of the agent's id or label, any case. */
  agent?: string;
  rule?: string;
  environment?: HoldLine['environment'];
  /** Words each found, any case, in the arguments, the tool, the agent (id or label) or the reference. */
  text?: string;
}

const searchWords = (text: string | undefined) => (text ?? '').split(/\s+/).filter(Boolean);

/**
 * The pending holds of the workspace the search finds, or null when there is no search. One query;
 * it reads the arguments only of holds the other fields did not match already.
 */
export async function searchMatches(db: Db, workspaceId: string, filters: InboxFilters) {
  const words = searchWords(filters.text);
  return words.length === 0 ? null : pendingIdsContaining(db, workspaceId, words);
}

const includes = (value: string | null, part: string) =>
  value !== null && value.toLowerCase().includes(part.toLowerCase());

/** Whether a line passes the filters; `found`: what the search found (null: no search). */
export function lineMatcher(
  { tool, connection, agent, rule, environment }: InboxFilters,
  found: ReadonlySet<string> | null,
) {
  const toolGlob = tool && /[*?]/.test(tool) ? compileGlob(tool) : null;
  return (line: HoldLine) =>
    (!tool || (toolGlob ? toolGlob(line.toolName) : includes(line.toolName, tool))) &&
    (!connection || line.connection === connection) &&
    (!agent || includes(line.agentId, agent) || includes(line.agentLabel, agent)) &&
    (!rule || line.ruleName === rule) &&
    (!environment || line.environment === environment) &&
    (!found || found.has(line.id));
}
