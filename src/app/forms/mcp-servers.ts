/**
 * The MCP server form, read: its fields checked as far as the form itself can tell (header lines, a
 * timeout of digits), then made into the server's entry of the workspace file. The file's own check
 * says the rest (a URL, a slug's letters, a timeout's bounds), by path, next to the same fields.
 */
import { z } from 'zod';
import { MAX_CALL_TIMEOUT_SECONDS } from '../../domain/mcp-servers.ts';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { Form } from '../respond.ts';
import { checkbox, type FieldErrors, parseForm, text } from './form.ts';

export type ServerEntry = NonNullable<WorkspaceConfig['mcp_servers']>[number];

const CALL_TIMEOUT_ERROR = `Must be a whole number of seconds from 1 to ${MAX_CALL_TIMEOUT_SECONDS}.`;
const TYPE_HEADERS_AGAIN = 'Type the headers again: their values are never sent back to a page.';

/** "Name: value" lines; an empty text is no headers. */
export function parseHeaderLines(text: string): { headers: Record<string, string> } | { error: string } {
  const headers: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [index, line] of text.split(/\r?\n/).entries()) {
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

/** The headers box, untrimmed (its errors name lines): null when nothing was typed, the stored ones stay. */
const headerLines = () =>
  z.preprocess(
    (value) => {
      const last: unknown = Array.isArray(value) ? value.at(-1) : value;
      return typeof last === 'string' ? last : '';
    },
    z.string().transform((lines, ctx) => {
      const parsed = parseHeaderLines(lines);
      if ('headers' in parsed) return Object.keys(parsed.headers).length > 0 ? parsed.headers : null;
      ctx.addIssue({ code: 'custom', message: parsed.error });
      return z.NEVER;
    }),
  );

const serverForm = z.object({
  slug: text(),
  name: text(),
  url: text(),
  headers: headerLines(),
  // Empty: the default. Out of bounds is for the file's check to say (its words, next to the field).
  call_timeout_seconds: text()
    .refine((seconds) => /^(\d{1,9})?$/.test(seconds), CALL_TIMEOUT_ERROR)
    .transform((seconds) => (seconds === '' ? undefined : Number(seconds))),
  clear_headers: checkbox(),
});

export type ServerInput = z.output<typeof serverForm>;

/** A posted server form; an edit's slug is the one in its URL, not a field. */
export const parseServerForm = (form: Form | undefined, slug?: string) =>
  parseForm(serverForm, slug === undefined ? form : { ...form, slug });

/** The form's fields as typed, to show a refused form again (never the headers' values). */
export function typedServer(form: Form | undefined, slug?: string) {
  const typed = (name: string) => text().parse(form?.[name]);
  return {
    slug: slug ?? typed('slug'),
    name: typed('name'),
    url: typed('url'),
    callTimeout: typed('call_timeout_seconds'),
    clear: checkbox().parse(form?.clear_headers),
  };
}

/** A refused form's errors, and a word for headers that were typed: the page asks for them again. */
export function refusedErrors(form: Form | undefined, errors: FieldErrors): FieldErrors {
  const typed = text().parse(form?.headers) !== '';
  return typed && !errors.headers ? { ...errors, headers: TYPE_HEADERS_AGAIN } : errors;
}

/** What the other servers say against this one: a slug taken (when registering), a name taken. */
export function conflicts(
  servers: readonly ServerEntry[],
  input: Pick<ServerInput, 'slug' | 'name'>,
  adding: boolean,
): FieldErrors {
  const errors: FieldErrors = {};
  if (adding && servers.some((server) => server.slug === input.slug))
    errors.slug = 'Is already registered: edit that server instead, or choose another slug.';
  const namesake = servers.find((server) => server.name === input.name && server.slug !== input.slug);
  if (namesake)
    errors.name = `Is the name of server “${namesake.slug}”: each server needs a connection name of its own.`;
  return errors;
}

/**
 * The server's entry in the workspace file: the stored one (none when registering) with the form's
 * fields over it, so what the form does not show stays as it is.
 */
export function serverEntry(input: ServerInput, stored: ServerEntry | undefined): ServerEntry {
  const { slug, name, url, call_timeout_seconds } = input;
  const entry: ServerEntry = { ...stored, slug, name, url, call_timeout_seconds };
  if (call_timeout_seconds === undefined) delete entry.call_timeout_seconds;
  // Typed headers replace the stored ones; none typed keeps them. A new registration never inherits
  // the headers of a removed server of the same slug.
  if (!stored || input.headers || input.clear_headers) entry.headers = input.headers ?? {};
  return entry;
}
