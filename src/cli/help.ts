/**
 * What `approvals help <command>` (or `<command> --help`) says about each command: its usage line, what
 * it does, its options and an example. `approvals --help` lists the usage lines alone.
 */

export interface CommandHelp {
  usage: string;
  about: string;
  options: Record<string, string>;
  example: string;
}

const WORKSPACE = { '--workspace <slug>': 'the workspace (its slug)' };
const REMOTE = ' With APPROVALS_URL, through the API with an admin-scope key.';

export const COMMANDS: CommandHelp[] = [
  {
    usage: 'workspace create <slug> --name <name> [--plan legacy_free]',
    about: 'Makes a workspace.',
    options: {
      '--name <name>': 'its display name',
      '--plan legacy_free': 'the legacy free plan, with a monthly hold limit',
    },
    example: 'approvals workspace create acme --name "Acme"',
  },
  {
    usage: 'workspace limits <slug> [--v1 <n>|default] [--mcp <n>|default]',
    about:
      "Gives one workspace rate limits of its own, or shows them; `default` goes back to the deployment's.",
    options: {
      '--v1 <n>': 'Core API requests a minute, per bucket',
      '--mcp <n>': 'MCP tool calls a minute, per key',
    },
    example: 'approvals workspace limits acme --v1 6000',
  },
  {
    usage: 'workspace freeze <slug> --reason <text>     (every new hold denied, no approved MCP call run)',
    about: 'The kill switch: every new hold is denied and no approved MCP call runs until unfrozen.' + REMOTE,
    options: { '--reason <text>': 'why, kept in the evidence' },
    example: 'approvals workspace freeze acme --reason "agent misbehaving"',
  },
  {
    usage: 'workspace unfreeze <slug>',
    about: 'Lifts the kill switch: holds are decided by the rules again.' + REMOTE,
    options: {},
    example: 'approvals workspace unfreeze acme',
  },
  {
    usage:
      'keys create --workspace <slug> --env live|test [--scope agent|admin] [--name <name>] [--agent <id> [--owner <e-mail>]]',
    about: 'Makes an API key and prints it once.',
    options: {
      ...WORKSPACE,
      '--env live|test': 'the environment the key is for',
      '--scope agent|admin': 'agent (the default) submits holds; admin also manages the configuration',
      '--name <name>': 'a name to tell keys apart',
      '--agent <id>': 'binds the key to one agent',
      '--owner <e-mail>': "the bound agent's owner, a member",
    },
    example: 'approvals keys create --workspace acme --env test',
  },
  {
    usage: 'keys revoke <key-id>',
    about: 'Revokes an API key at once.',
    options: {},
    example: 'approvals keys revoke key_…',
  },
  {
    usage: 'apply --workspace <slug> -f <file.yaml|file.json> [--expect-version <n>]',
    about: 'Applies a workspace file: members, tools, rules, webhook.' + REMOTE,
    options: {
      ...WORKSPACE,
      '-f, --file <file>': 'the workspace file, YAML or JSON',
      '--expect-version <n>': 'only if the configuration is still at this version (else exit 4)',
    },
    example: 'approvals apply --workspace acme -f acme.yaml',
  },
  {
    usage: 'export --workspace <slug>',
    about: "Prints the workspace's file, as apply takes it, with its version." + REMOTE,
    options: WORKSPACE,
    example: 'approvals export --workspace acme > acme.yaml',
  },
  {
    usage: 'evidence export --workspace <slug>          (JSON Lines on stdout)',
    about: "Prints the workspace's evidence chain, one JSON record a line.",
    options: WORKSPACE,
    example: 'approvals evidence export --workspace acme > evidence.jsonl',
  },
  {
    usage: 'evidence reanchor --workspace <slug> --reason <text>',
    about: 'Starts the evidence chain again after a failed check, saying why.',
    options: { ...WORKSPACE, '--reason <text>': 'why, kept in the evidence' },
    example: 'approvals evidence reanchor --workspace acme --reason "restored from backup"',
  },
  {
    usage: 'verify --workspace <slug> [--against <checkpoint.json>]',
    about: "Checks the workspace's evidence chain in the database (exit 3 when it is not intact).",
    options: { ...WORKSPACE, '--against <checkpoint.json>': 'a signed checkpoint it must extend' },
    example: 'approvals verify --workspace acme',
  },
  {
    usage: 'verify --export <evidence.jsonl> --key <key.pem|key.json> [--against <checkpoint.json>]',
    about: 'Checks an exported evidence file offline, with the public key that signed it.',
    options: {
      '--export <file>': 'the file evidence export wrote',
      '--key <file>': 'the public signing key',
      '--against <checkpoint.json>': 'a signed checkpoint it must extend',
    },
    example: 'approvals verify --export evidence.jsonl --key signing-key.pem',
  },
  {
    usage:
      'simulate --workspace <slug> -f <draft.yaml> [--since 30d] [--format text|markdown] [--fail-on-change]',
    about: 'Replays past holds against a draft workspace file and reports what would change.' + REMOTE,
    options: {
      ...WORKSPACE,
      '-f, --file <file>': 'the draft',
      '--since <30d>': 'how far back (d, h or m)',
      '--format markdown': 'the report as Markdown, for a pull-request comment',
      '--fail-on-change': 'exit code 5 when any call would be decided differently',
    },
    example: 'approvals simulate --workspace acme -f draft.yaml --since 7d',
  },
  {
    usage:
      'holds list --workspace <slug> [--status <status>] [--tool <glob>] [--agent <id>] [--before <ref>] [--limit 50]',
    about: "Lists the workspace's holds, newest first." + REMOTE,
    options: {
      ...WORKSPACE,
      '--status <status>': 'pending, allowed, denied, …',
      '--tool <glob>': 'tool names matching it',
      '--agent <id>': "one agent's",
      '--before <ref>': 'the page after this hold',
      '--limit <n>': 'how many (50)',
    },
    example: 'approvals holds list --workspace acme --status pending',
  },
  {
    usage: 'holds show --workspace <slug> <ref>',
    about: 'Shows one hold: its call, decisions and events.' + REMOTE,
    options: WORKSPACE,
    example: 'approvals holds show --workspace acme svc_pa_…',
  },
  {
    usage: 'users invite --workspace <slug> --email <e-mail>',
    about: "Prints a one-time sign-in link to the app for a member, at the service's address.",
    options: { ...WORKSPACE, '--email <e-mail>': 'the member' },
    example: 'approvals users invite --workspace acme --email alice@acme.test',
  },
  {
    usage: 'webhook rotate --workspace <slug>',
    about: 'Makes a new webhook signing secret; the old one signs beside it for 24 hours.',
    options: WORKSPACE,
    example: 'approvals webhook rotate --workspace acme',
  },
  {
    usage: 'webhook deliveries --workspace <slug> [--state pending|delivered|dead]',
    about: 'Prints the webhook delivery log, newest first.',
    options: { ...WORKSPACE, '--state <state>': 'pending, delivered or dead only' },
    example: 'approvals webhook deliveries --workspace acme --state dead',
  },
  {
    usage: 'webhook redeliver --workspace <slug> (<event-id>… | --all-dead)',
    about: 'Queues events for a fresh round of delivery attempts.',
    options: { ...WORKSPACE, '--all-dead': 'every event whose attempts ran out' },
    example: 'approvals webhook redeliver --workspace acme --all-dead',
  },
  {
    usage: 'doctor                                      (checks the settings it can)',
    about: 'Checks the settings it can from here, one line each; exit 1 when one fails.',
    options: {},
    example: 'approvals doctor',
  },
  {
    usage: 'migrate',
    about: 'Applies the database migrations not yet applied.',
    options: {},
    example: 'approvals migrate',
  },
];

/** The help of the commands that start with `words` (every command for none). */
export function helpOf(words: string[]): CommandHelp[] {
  return COMMANDS.filter((command) => words.every((word, i) => command.usage.split(' ')[i] === word));
}

/** One command's help as printed: usage, what it does, options, example. */
export function describeCommand(command: CommandHelp): string {
  const options = Object.entries(command.options);
  const width = Math.max(0, ...options.map(([name]) => name.length));
  return [
    `usage: approvals ${command.usage.replace(/\s{2,}\(.*\)$/, '')}`,
    '',
    command.about,
    ...(options.length > 0
      ? ['', 'Options:', ...options.map(([name, text]) => `  ${name.padEnd(width)}  ${text}`)]
      : []),
    '',
    'Example:',
    `  ${command.example}`,
  ].join('\n');
}
