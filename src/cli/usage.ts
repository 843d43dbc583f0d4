/** The command line's words: its usage text, its options, and the usage errors (exit 2) it answers. */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { lookBackMs } from '../domain/time-text.ts';
import { COMMANDS } from './help.ts';

export const USAGE = `usage: approvals <command> [--json] [--init]
${COMMANDS.map((command) => `  ${command.usage}`).join('\n')}

Against a deployed service, set APPROVALS_URL and APPROVALS_KEY (an admin-scope key), or pass --url and
--key: apply, export, simulate, holds and workspace freeze|unfreeze then call its API, and --workspace, if
given, must be the key's.
\`approvals help <command>\` (or \`approvals <command> --help\`) describes one, with an example;
\`approvals --version\` prints the version.`;

export class UsageError extends Error {}

export const options = {
  json: { type: 'boolean' },
  name: { type: 'string' },
  plan: { type: 'string' },
  workspace: { type: 'string' },
  env: { type: 'string' },
  scope: { type: 'string' },
  file: { type: 'string', short: 'f' },
  since: { type: 'string' },
  email: { type: 'string' },
  state: { type: 'string' },
  'all-dead': { type: 'boolean' },
  against: { type: 'string' },
  reason: { type: 'string' },
  export: { type: 'string' },
  key: { type: 'string' },
  v1: { type: 'string' },
  mcp: { type: 'string' },
  'expect-version': { type: 'string' },
  init: { type: 'boolean' },
  url: { type: 'string' },
  status: { type: 'string' },
  tool: { type: 'string' },
  agent: { type: 'string' },
  owner: { type: 'string' },
  before: { type: 'string' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  format: { type: 'string' },
  'fail-on-change': { type: 'boolean' },
} as const;

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

/** A command's answer: the JSON printed with --json, the text printed otherwise, and its exit code (0). */
export type Answer = [result: object, text: string, exitCode?: number];

export function required(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** The usage lines of the commands that start with `words` (all of them for none). */
export function usageOf(words: string[]): string[] {
  return COMMANDS.map((command) => command.usage.replace(/\s{2,}\(.*\)$/, '')).filter((line) =>
    words.every((word, i) => line.split(' ')[i] === word),
  );
}

/** The word of `known` nearest to `word` (a typo's distance away at most), for a "did you mean". */
export function nearest(word: string, known: string[]): string | undefined {
  const distance = (a: string, b: string) => {
    // Levenshtein, one row at a time.
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const next = [i];
      for (let j = 1; j <= b.length; j++)
        next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      row = next;
    }
    return row[b.length]!;
  };
  const [best] = known
    .map((candidate) => ({ candidate, far: distance(word, candidate) }))
    .filter(({ candidate, far }) => far <= Math.min(2, Math.floor(candidate.length / 3)))
    .sort((a, b) => a.far - b.far);
  return best?.candidate;
}

/** parseArgs' refusal in our words: one line, the option named, the nearest known one suggested. */
export function optionError(error: Error): string {
  const unknown = /^Unknown option '(-{1,2})([^']*)'/.exec(error.message);
  if (unknown) {
    const [, dashes, name] = unknown;
    const guess = dashes === '--' ? nearest(name!, Object.keys(options)) : undefined;
    return `unknown option ${dashes}${name}${guess ? ` (did you mean --${guess}?)` : ''}`;
  }
  const missing = /^Option '(?:-\w, )?(--[\w-]+)[^']*' argument missing/.exec(error.message);
  if (missing) return `${missing[1]} needs a value`;
  const notBoolean = /^Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(error.message);
  if (notBoolean) return `${notBoolean[1]} takes no value`;
  return error.message;
}

/** A usage error's answer: the reason, then how the command is used (or where to look). */
export function usageAnswer(reason: string, words: string[]): string {
  for (let known = Math.min(words.length, 2); known > 0; known--) {
    const lines = usageOf(words.slice(0, known));
    if (lines.length > 0)
      return `approvals: ${reason}\n${lines.map((line) => `usage: approvals ${line}`).join('\n')}\n`;
  }
  return `approvals: ${reason}\nRun \`approvals --help\` for every command.\n`;
}

export function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`cannot read ${file}`);
  }
}

/** `--since 30d` → milliseconds. */
export function duration(text: string): number {
  const ms = lookBackMs(text);
  if (ms === undefined) throw new UsageError('--since must look like 30d, 12h or 90m');
  return ms;
}
