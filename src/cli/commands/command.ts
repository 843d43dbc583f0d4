/**
 * What a command is: the groups in this folder list theirs, those that read and write the database and
 * those that call a deployed service's API instead (APPROVALS_URL).
 */
import type { ServiceContext } from '../../services/context.ts';
import type { Remote } from '../remote.ts';
import type { Answer, Values } from '../usage.ts';

export interface LocalCommand {
  /** How many words the command line may have: the command's own and the arguments it takes. */
  maxWords: number;
  /** Its answer; null when it wrote its own output (a stream too long for one JSON object). */
  run(ctx: ServiceContext, words: string[], values: Values): Promise<Answer | null>;
}

export interface RemoteCommand {
  maxWords: number;
  run(remote: Remote, words: string[], values: Values): Promise<Answer>;
}

/** The command the words name (its first two, or its first alone), if it takes that many words. */
export function commandOf<Command extends { maxWords: number }>(
  commands: Record<string, Command>,
  words: string[],
): Command | undefined {
  const name = words.slice(0, 2).join(' ');
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  return command && words.length <= command.maxWords ? command : undefined;
}
