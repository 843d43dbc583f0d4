/** The command line's words: its usage text, its options, and the usage errors (exit 2) it answers. */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { lookBackMs } from '../domain/time-text.ts';

export const USAGE = `usage: approvals <command> [--json] [--init]
  workspace create <slug> --name <name> [--plan legacy_free]
  workspace limits <slug> [--v1 <n>|default] [--mcp <n>|default]
  workspace freeze <slug> --reason <text>     (every new hold denied, no approved MCP call run)
  workspace unfreeze <slug>
  keys create --workspace <slug> --env live|test [--scope agent|admin] [--name <name>] [--agent <id> [--owner <e-mail>]]
  keys revoke <key-id>
  apply --workspace <slug> -f <file.yaml|file.json> [--expect-version <n>]
  export --workspace <slug>
  evidence export --workspace <slug>          (JSON Lines on stdout)
  evidence reanchor --workspace <slug> --reason <text>
  verify --workspace <slug> [--against <checkpoint.json>]
  verify --export <evidence.jsonl> --key <key.pem|key.json> [--against <checkpoint.json>]
  simulate --workspace <slug> -f <draft.yaml> [--since 30d]
  holds list --workspace <slug> [--status <status>] [--tool <glob>] [--agent <id>] [--before <ref>] [--limit 50]
  holds show --workspace <slug> <ref>
  users invite --workspace <slug> --email <e-mail>
  webhook rotate --workspace <slug>
  webhook deliveries --workspace <slug> [--state pending|delivered|dead]
  webhook redeliver --workspace <slug> (<event-id>… | --all-dead)
  doctor                                      (checks the settings it can)
  migrate

Against a deployed service, set APPROVALS_URL and APPROVALS_KEY (an admin-scope key), or pass --url and
--key: apply, export, simulate, holds and workspace freeze|unfreeze then call its API, and --workspace is
the key's (freeze and unfreeze refuse a slug that is not).`;

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
} as const;

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

/** A command's answer: the JSON printed with --json, and the text printed otherwise. */
export type Answer = [object, string];

export function required(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** The usage lines of the commands that start with `words` (all of them for none). */
export function usageOf(words: string[]): string[] {
  const commands = USAGE.split('\n\n')[0]!
    .split('\n')
    .slice(1)
    .map((line) => line.trim());
  return commands.filter((line) => words.every((word, i) => line.split(' ')[i] === word));
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
