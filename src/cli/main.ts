/**
 * The `approvals` command. Each command prints one JSON object on stdout with --json (otherwise a
 * short text), exits 0 on success, and non-zero with a one-line reason on stderr otherwise. The
 * commands themselves are in commands/, one file per group.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Config, loadConfig } from '../config.ts';
import { openContext } from '../open-context.ts';
import type { ServiceContext } from '../services/context.ts';
import { ServiceError } from '../services/errors.ts';
import { recordedPublicUrl } from '../services/public-url.ts';
import { migrate } from '../store/migrate.ts';
import { openDb } from '../store/open.ts';
import { commandOf, type LocalCommand, type RemoteCommand } from './commands/command.ts';
import { configCommands, remoteConfigCommands } from './commands/config.ts';
import { ChainInvalid, evidenceCommands, verifyExportFile } from './commands/evidence.ts';
import { freezeCommands, remoteFreezeCommands } from './commands/freeze.ts';
import { holdsCommands, remoteHoldsCommands } from './commands/holds.ts';
import { webhookCommands } from './commands/webhooks.ts';
import { workspaceCommands } from './commands/workspace.ts';
import { doctor } from './doctor.ts';
import { keyWorkspace, type Remote } from './remote.ts';
import { describeCommand, helpOf } from './help.ts';
import {
  type Answer,
  nearest,
  optionError,
  options,
  USAGE,
  UsageError,
  usageAnswer,
  type Values,
} from './usage.ts';

const LOCAL_COMMANDS: Record<string, LocalCommand> = {
  ...evidenceCommands,
  ...workspaceCommands,
  ...freezeCommands,
  ...configCommands,
  ...holdsCommands,
  ...webhookCommands,
};

/** apply, export, simulate, holds and the freeze through the service's API: the same answers as the local commands. */
const REMOTE_COMMANDS: Record<string, RemoteCommand> = {
  ...remoteConfigCommands,
  ...remoteHoldsCommands,
  ...remoteFreezeCommands,
};

/** Runs a command; null when it wrote its own output (a stream too long for one JSON object). */
async function run(ctx: ServiceContext, words: string[], values: Values): Promise<Answer | null> {
  return localCommand(words).run(ctx, words, values);
}

/** The command the words name; none is a usage error that names the nearest one. */
function localCommand(words: string[]): LocalCommand {
  const command = commandOf(LOCAL_COMMANDS, words);
  if (command) return command;
  const guess = nearest(words.slice(0, 2).join(' '), Object.keys(LOCAL_COMMANDS));
  throw new UsageError(`unknown command: ${words.join(' ')}${guess ? ` (did you mean ${guess}?)` : ''}`);
}

/** The service to call instead of the database, when APPROVALS_URL (or --url) is set. */
function remoteOf(values: Values): Remote | null {
  const url = values.url ?? process.env.APPROVALS_URL;
  if (!url) return null;
  const key = values.key ?? process.env.APPROVALS_KEY;
  if (!key) throw new UsageError('APPROVALS_KEY (or --key) is required with APPROVALS_URL (or --url)');
  if (!/^https?:\/\//.test(url)) throw new UsageError('APPROVALS_URL must start with http:// or https://');
  const host = new URL(url).hostname;
  if (url.startsWith('http://') && !['localhost', '127.0.0.1', '[::1]'].includes(host))
    process.stderr.write(
      `approvals: warning: ${url} is plain HTTP: the API key crosses the network unencrypted\n`,
    );
  return { url, key };
}

/**
 * The storage's context, at the address the service recorded when it started: links made here point at
 * it. Without a record (it never started on this storage), only PUBLIC_URL names it: a link is refused.
 */
async function cliContext(config: Config, words: string[]): Promise<ServiceContext> {
  const ctx = await openContext(config);
  const recorded = await recordedPublicUrl(ctx);
  if (recorded) ctx.publicUrl = recorded;
  else if (!config.publicUrl && words.join(' ') === 'users invite') {
    await ctx.db.close();
    throw new Error(
      "the service's address is not known: it has not started on this storage yet. Start it, or set PUBLIC_URL to the address people open",
    );
  }
  return ctx;
}

async function runRemote(remote: Remote, words: string[], values: Values): Promise<Answer> {
  const command = commandOf(REMOTE_COMMANDS, words);
  if (!command)
    throw new Error(
      `${words.join(' ')} needs the database: it runs where DATA_DIR or DATABASE_URL reaches the service's storage, not through APPROVALS_URL (unset it to run here)`,
    );
  // The key names the workspace; a --workspace beside it must name the same one, or nothing runs.
  if (values.workspace !== undefined) {
    const workspace = await keyWorkspace(remote);
    if (values.workspace !== workspace)
      throw new Error(
        `--workspace ${values.workspace} is not this key's workspace: the key of APPROVALS_KEY (or --key) is of ${workspace}`,
      );
  }
  return command.run(remote, words, values);
}

/** `approvals --help`, `approvals help apply`, `approvals apply --help`: every command, or one described. */
function help(words: string[]): number {
  const commands = words.length > 0 ? helpOf(words.slice(0, 2)) : [];
  if (words.length > 0 && commands.length === 0) {
    process.stderr.write(usageAnswer(`no command ${words.join(' ')}`, []));
    return 2;
  }
  process.stdout.write(`${commands.length > 0 ? commands.map(describeCommand).join('\n\n') : USAGE}\n`);
  return 0;
}

function printVersion(): number {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`approvals ${version}\n`);
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    const words = argv.filter((arg) => !arg.startsWith('-'));
    process.stderr.write(usageAnswer(optionError(error as Error), words));
    return 2;
  }
  if (parsed.values.version) return printVersion();
  if (parsed.values.help) return help(parsed.positionals);
  if (parsed.positionals[0] === 'help') return help(parsed.positionals.slice(1));
  if (parsed.positionals.length === 0) {
    process.stderr.write(usageAnswer('a command is required', []));
    return 2;
  }
  let ctx: ServiceContext | undefined;
  try {
    const config = { ...loadConfig(), logLevel: 'silent' as const };
    if (parsed.positionals.join(' ') === 'migrate') {
      // Opened without migrating, so the answer says what this command applied.
      const db = await openDb(config, { migrations: false });
      const applied = await migrate(db).finally(() => db.close());
      const text = applied.length ? `Applied migrations ${applied.join(', ')}.` : 'Nothing to migrate.';
      process.stdout.write(parsed.values.json ? `${JSON.stringify({ applied })}\n` : `${text}\n`);
      return 0;
    }
    if (parsed.positionals.join(' ') === 'doctor') {
      const checks = await doctor(config);
      const text = checks
        .map((check) => `${check.status.padEnd(4)}  ${check.name}: ${check.detail}`)
        .join('\n');
      process.stdout.write(parsed.values.json ? `${JSON.stringify({ checks })}\n` : `${text}\n`);
      return checks.some((check) => check.status === 'fail') ? 1 : 0;
    }
    localCommand(parsed.positionals); // a typo is named before storage or a service is looked for
    const offline = parsed.positionals.join(' ') === 'verify' && parsed.values.export !== undefined;
    const remote = offline ? null : remoteOf(parsed.values);
    if (remote) {
      const [result, text, exitCode = 0] = await runRemote(remote, parsed.positionals, parsed.values);
      process.stdout.write(parsed.values.json ? `${JSON.stringify(result)}\n` : `${text}\n`);
      return exitCode;
    }
    // A DATA_DIR that is not the service's would otherwise get an empty database of its own, and every
    // command would answer "not found" about it.
    if (
      !offline &&
      !config.databaseUrl &&
      !parsed.values.init &&
      !existsSync(join(config.dataDir, 'approvals.db'))
    )
      throw new ServiceError(
        'not_found',
        `no database in DATA_DIR ${config.dataDir}: set DATA_DIR (or DATABASE_URL) to the service's, or pass --init to make a new one here`,
      );
    if (!offline) ctx = await cliContext(config, parsed.positionals);
    const answer = offline
      ? await verifyExportFile(parsed.values)
      : await run(ctx!, parsed.positionals, parsed.values);
    if (answer)
      process.stdout.write(parsed.values.json ? `${JSON.stringify(answer[0])}\n` : `${answer[1]}\n`);
    return answer?.[2] ?? 0;
  } catch (error) {
    if (error instanceof ChainInvalid) {
      if (parsed.values.json) process.stdout.write(`${JSON.stringify(error.result)}\n`);
      process.stderr.write(`approvals: ${error.message}\n`);
      return 3;
    }
    if (error instanceof UsageError) {
      process.stderr.write(usageAnswer(error.message, parsed.positionals));
      return 2;
    }
    const reason =
      error instanceof ServiceError ? error.message.replaceAll('\n', '; ') : (error as Error).message;
    process.stderr.write(`approvals: ${reason}\n`);
    // A refused `apply --expect-version`: CI can tell "someone changed it meanwhile" from a bad file.
    return error instanceof ServiceError && error.code === 'conflict' ? 4 : 1;
  } finally {
    await ctx?.db.close();
  }
}
