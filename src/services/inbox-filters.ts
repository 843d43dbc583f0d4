/**
 * Which waiting holds an inbox list shows: its filters, and the search, which also looks into the
 * arguments (`q=Globex`, `q=IBAN`). The arguments are searched by the database, the rest here.
 */
import { compileGlob } from '../domain/rules.ts';
import type { Db } from '../store/db.ts';
import { argumentsContaining, type HoldLine, SEARCHED_ARGUMENTS_SIZE } from '../store/hold-lines.ts';
import { asInJson } from '../store/where.ts';

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

/** A search: its words, and for each the pending holds whose arguments contain it. */
export interface Search {
  words: string[];
  inArguments: Set<string>[];
}

/**
 * What the search finds in the arguments of these lines (one query a few hundred lines), or null when
 * there is no search. Arguments longer than SEARCHED_ARGUMENTS_SIZE are not read: their summary, which
 * has the values the rule looks at and money first, is searched instead (`searched`).
 */
export async function searchMatches(
  db: Db,
  workspaceId: string,
  filters: InboxFilters,
  lines: readonly HoldLine[],
): Promise<Search | null> {
  const words = searchWords(filters.text);
  if (words.length === 0) return null;
  const small = lines.filter((line) => line.argumentsSize <= SEARCHED_ARGUMENTS_SIZE).map((line) => line.id);
  return { words, inArguments: await argumentsContaining(db, workspaceId, small, words) };
}

const includes = (value: string | null, part: string) =>
  value !== null && value.toLowerCase().includes(part.toLowerCase());

/**
 * Whether each word of the search is in the line: its tool, agent (id or label), reference, the
 * summary of its arguments (as JSON writes a value), or the arguments themselves.
 */
const searched = (line: HoldLine, { words, inArguments }: Search) =>
  words.every(
    (word, i) =>
      inArguments[i]!.has(line.id) ||
      [line.toolName, line.agentId, line.agentLabel, line.id].some((field) => includes(field, word)) ||
      includes(line.argumentsSummary, asInJson(word)),
  );

/** Whether a line passes the filters; `search`: what the search found (null: no search). */
export function lineMatcher(
  { tool, connection, agent, rule, environment }: InboxFilters,
  search: Search | null,
) {
  const toolGlob = tool && /[*?]/.test(tool) ? compileGlob(tool) : null;
  return (line: HoldLine) =>
    (!tool || (toolGlob ? toolGlob(line.toolName) : includes(line.toolName, tool))) &&
    (!connection || line.connection === connection) &&
    (!agent || includes(line.agentId, agent) || includes(line.agentLabel, agent)) &&
    (!rule || line.ruleName === rule) &&
    (!environment || line.environment === environment) &&
    (!search || searched(line, search));
}
