/**
 * The `approvals` command. Each command prints one JSON object on stdout with --json (otherwise a
 * short text), exits 0 on success, and non-zero with a one-line reason on stderr otherwise.
 */
import { once } from 'node:events';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import type { Checkpoint, EvidenceEntry } from '../../packages/sdk/src/chain.ts';
import { type TrustedKeys, verifyEvidenceExport } from '../../packages/sdk/src/evidence.ts';
import { verifySignedDecisions } from '../../packages/sdk/src/signed-decision.ts';
import { loadConfig, MAX_RATE_LIMIT } from '../config.ts';
import { describeTypeMismatch } from '../domain/rules.ts';
import { openContext } from '../open-context.ts';
import { doctor } from './doctor.ts';
import { callService, type Remote } from './remote.ts';
import { holdRecord } from '../domain/hold.ts';
import { HOLD_REFERENCE_PATTERN } from '../domain/ids.ts';
import { lookBackMs } from '../domain/time-text.ts';
import { listHoldRecords } from '../services/inbox.ts';
import { getHold } from '../services/read-hold.ts';
import { createApiKey, revokeApiKey } from '../services/api-keys.ts';
import { applyConfig, currentConfigVersion, exportConfig, parseConfig } from '../services/apply-config.ts';
import type { ServiceContext } from '../services/context.ts';
import { ServiceError } from '../services/errors.ts';
import type { ChainBreak } from '../services/chain-guard.ts';
import { reanchorChain } from '../services/evidence.ts';
import { exportEvidence } from '../services/export-evidence.ts';
import { inviteLink } from '../services/sign-in.ts';
import { deliveryLog, redeliver, rotateWebhookSecret } from '../services/webhooks.ts';
import { followUpsText, type SimulationReport, simulatePolicy } from '../services/simulate-policy.ts';
import { verifyChain } from '../services/verify-chain.ts';
import {
  createWorkspace,
  LIMIT_RANGE,
  type LimitName,
  requireWorkspace,
  setWorkspaceLimits,
  type WorkspaceLimits,
  workspaceLimits,
} from '../services/workspaces.ts';
import { migrate } from '../store/migrate.ts';
import { openDb } from '../store/open.ts';

const USAGE = `usage: approvals <command> [--json] [--init]
  workspace create <slug> --name <name> [--plan legacy_free]
  workspace limits <slug> [--v1 <n>|default] [--mcp <n>|default]
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
--key: apply, export, simulate and holds then call its API, and --workspace is the key's.`;

class UsageError extends Error {}

const options = {
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

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

function required(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** Where this command reads and writes: what "not found" was looked for in. */
function storageText(): string {
  const { databaseUrl, dataDir } = loadConfig();
  return databaseUrl
    ? 'the PostgreSQL database of DATABASE_URL'
    : `the SQLite database in DATA_DIR ${dataDir}`;
}

/** The workspace of a slug given on the command line; not found names the slug and where it looked. */
async function workspaceNamed(ctx: ServiceContext, slug: string) {
  try {
    return await requireWorkspace(ctx, slug);
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found')
      throw new ServiceError('not_found', `workspace ${slug} not found in ${storageText()}`);
    throw error;
  }
}

/** The usage lines of the commands that start with `words` (all of them for none). */
function usageOf(words: string[]): string[] {
  const commands = USAGE.split('\n\n')[0]!
    .split('\n')
    .slice(1)
    .map((line) => line.trim());
  return commands.filter((line) => words.every((word, i) => line.split(' ')[i] === word));
}

/** A usage error's answer: the reason, then how the command is used (or where to look). */
function usageAnswer(reason: string, words: string[]): string {
  for (let known = Math.min(words.length, 2); known > 0; known--) {
    const lines = usageOf(words.slice(0, known));
    if (lines.length > 0)
      return `approvals: ${reason}\n${lines.map((line) => `usage: approvals ${line}`).join('\n')}\n`;
  }
  return `approvals: ${reason}\nRun \`approvals --help\` for every command.\n`;
}

/** Runs a command; null when it wrote its own output (a stream too long for one JSON object). */
async function run(ctx: ServiceContext, words: string[], values: Values): Promise<[object, string] | null> {
  const command = words.slice(0, 2).join(' ');
  if (command === 'evidence export' && words.length === 2) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    for await (const chunk of exportEvidence(ctx, workspace.id)) {
      if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
    }
    return null;
  }
  if (command === 'evidence reanchor' && words.length === 2) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const reason = required(values, 'reason');
    const done = await reanchorChain(ctx, workspace.id, reason);
    ctx.chainGuard.flush();
    return [
      done,
      `Re-anchored the evidence of ${workspace.slug} at seq ${done.entry.seq}: ${breakText(done)} named there for good.`,
    ];
  }
  if (words[0] === 'verify' && words.length === 1) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const against = values.against === undefined ? undefined : readCheckpoint(values.against);
    return verdictWithSignatures(
      await verifyChain(ctx, workspace.id, {}, against),
      exportEvidence(ctx, workspace.id),
      `evidence of ${workspace.slug}`,
    );
  }
  if (command === 'workspace create') {
    const slug = words[2];
    if (!slug) throw new UsageError('workspace create needs a slug');
    const plan = values.plan;
    if (plan !== undefined && plan !== 'legacy_free') throw new UsageError('--plan must be legacy_free');
    const workspace = await createWorkspace(ctx, { slug, name: required(values, 'name'), plan });
    const out = { id: workspace.id, slug: workspace.slug, name: workspace.name };
    return [out, `Created workspace ${out.slug} (${out.id}).`];
  }
  if (command === 'workspace limits' && words.length <= 3) {
    const slug = words[2];
    if (!slug) throw new UsageError('workspace limits needs a slug');
    // Checked before anything is read, so a bad value changes nothing.
    const changes: Partial<Record<LimitName, number | null>> = {};
    for (const name of ['v1', 'mcp'] as const) {
      const text = values[name];
      if (text !== undefined) changes[name] = limitOption(name, text);
    }
    const workspace = await workspaceNamed(ctx, slug);
    if (Object.keys(changes).length === 0) {
      const limits = workspaceLimits(ctx, workspace);
      return [limits, describeLimits(limits)];
    }
    const result = await setWorkspaceLimits(ctx, workspace, changes);
    const limits = workspaceLimits(ctx, result.workspace);
    const what = result.changed ? `Changed the limits of ${slug}.` : `The limits of ${slug} were already so.`;
    return [{ ...limits, changed: result.changed }, `${what}\n${describeLimits(limits)}`];
  }
  if (command === 'keys create') {
    const env = required(values, 'env');
    if (env !== 'live' && env !== 'test') throw new UsageError('--env must be live or test');
    const scope = values.scope ?? 'agent';
    if (scope !== 'agent' && scope !== 'admin') throw new UsageError('--scope must be agent or admin');
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const key = await createApiKey(ctx, {
      workspace,
      env,
      scope,
      name: values.name,
      agent: values.agent,
      owner: values.owner,
    });
    // `agent` and `owner` only for a bound key: the answer of an unbound one is as it always was.
    const { agent, owner, ...unbound } = key;
    const bound = agent
      ? ` bound to agent ${agent}${owner ? ` of ${owner} (who may not approve its holds)` : ''}`
      : '';
    const out = agent ? key : unbound;
    return [out, `Created ${scope} key ${key.id}${bound}. Store it now, it is not shown again:\n${key.key}`];
  }
  if (command === 'keys revoke') {
    const id = words[2];
    if (!id) throw new UsageError('keys revoke needs a key id');
    const result = await revokeApiKey(ctx, id);
    return [result, `Revoked key ${id}.`];
  }
  if (words[0] === 'apply' && words.length === 1) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const file = required(values, 'file');
    const result = await applyConfig(ctx, workspace, parseConfig(readText(file)), {
      expectVersion: expectVersionOf(values),
    });
    return applied(result, file, workspace.slug);
  }
  if (words[0] === 'export' && words.length === 1) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    // The version first, as the app's forms read it: a change landing in between makes a later
    // `apply --expect-version` refuse, never lose it.
    const version = await currentConfigVersion(ctx, workspace);
    return exported(await exportConfig(ctx, workspace), version, workspace.slug);
  }
  if (words[0] === 'simulate' && words.length === 1) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const draft = parseConfig(readText(required(values, 'file')));
    const report = await simulatePolicy(ctx, workspace, draft, { sinceMs: duration(values.since ?? '30d') });
    return [report, describeSimulation(report)];
  }
  if (command === 'holds list' && words.length === 2) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const { before, limit, ...filters } = holdListOptions(values);
    return listed(await listHoldRecords(ctx, workspace.id, filters, { before, limit }));
  }
  if (command === 'holds show') {
    const id = holdReference(words);
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    return shown(holdRecord(await getHold(ctx, workspace.id, id)));
  }
  if (command === 'webhook rotate' && words.length === 2) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const rotated = await rotateWebhookSecret(ctx, workspace.id);
    return [
      rotated,
      `New signing secret (shown once; the old one keeps signing for 24 hours):\n${rotated.secret}`,
    ];
  }
  if (command === 'webhook deliveries' && words.length === 2) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const state = values.state;
    if (state !== undefined && !['pending', 'delivered', 'dead'].includes(state)) {
      throw new UsageError('--state must be pending, delivered or dead');
    }
    const deliveries = await deliveryLog(ctx, workspace.id, { state });
    const lines = deliveries.map(
      (d) =>
        `${d.id} ${d.event} ${d.hold} ${d.state} after ${d.attempts.length} attempt(s)` +
        (d.attempts.length ? `, last ${d.attempts.at(-1)!.status_code ?? d.attempts.at(-1)!.error}` : ''),
    );
    return [{ deliveries }, lines.join('\n') || 'No deliveries.'];
  }
  if (command === 'webhook redeliver') {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const ids = words.slice(2);
    if (values['all-dead'] === ids.length > 0)
      throw new UsageError('name event ids or --all-dead (not both)');
    const result = await redeliver(ctx, workspace.id, values['all-dead'] ? 'all-dead' : ids);
    return [result, `Queued ${result.requeued} event(s) for delivery.`];
  }
  if (command === 'users invite' && words.length === 2) {
    const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
    const invite = await inviteLink(ctx, workspace, required(values, 'email'));
    return [invite, `One-time sign-in link (valid for 7 days):\n${invite.url}`];
  }
  throw new UsageError(`unknown command: ${words.join(' ') || '(none)'}`);
}

const REMOTE_COMMANDS = ['apply', 'export', 'simulate', 'holds list', 'holds show'];

/** The service to call instead of the database, when APPROVALS_URL (or --url) is set. */
function remoteOf(values: Values): Remote | null {
  const url = values.url ?? process.env.APPROVALS_URL;
  if (!url) return null;
  const key = values.key ?? process.env.APPROVALS_KEY;
  if (!key) throw new UsageError('APPROVALS_KEY (or --key) is required with APPROVALS_URL (or --url)');
  if (!/^https?:\/\//.test(url)) throw new UsageError('APPROVALS_URL must start with http:// or https://');
  if (values.workspace !== undefined)
    throw new UsageError("--workspace is not used with APPROVALS_URL: the key's workspace is");
  const host = new URL(url).hostname;
  if (url.startsWith('http://') && !['localhost', '127.0.0.1', '[::1]'].includes(host))
    process.stderr.write(
      `approvals: warning: ${url} is plain HTTP: the API key crosses the network unencrypted\n`,
    );
  return { url, key };
}

/** apply, export, simulate and holds through the service's API: the same answers as the local commands. */
async function runRemote(remote: Remote, words: string[], values: Values): Promise<[object, string]> {
  const command = words.length > 1 && words[0] === 'holds' ? words.slice(0, 2).join(' ') : words[0]!;
  const exact = command.split(' ').length === words.length || command === 'holds show';
  if (!REMOTE_COMMANDS.includes(command) || !exact)
    throw new Error(
      `${words.join(' ')} needs the database: it runs where DATA_DIR or DATABASE_URL reaches the service's storage, not through APPROVALS_URL (unset it to run here)`,
    );
  if (command === 'apply') {
    const file = required(values, 'file');
    const expected = expectVersionOf(values);
    const { body } = await callService(remote, 'PUT', 'api/v1/workspace/config', {
      body: readText(file),
      headers: {
        'Content-Type': 'application/yaml',
        ...(expected === undefined ? {} : { 'If-Match': `"${expected}"` }),
      },
    });
    return applied(body as { version: number; items_changed: string[] }, file, remote.url);
  }
  if (command === 'export') {
    const { body, headers } = await callService(remote, 'GET', 'api/v1/workspace/config');
    return exported(body as object, Number(headers.get('config-version')), remote.url);
  }
  if (command === 'simulate') {
    const draft = readText(required(values, 'file'));
    const since = values.since ?? '30d';
    duration(since); // the same usage error as locally
    const { body } = await callService(remote, 'POST', `api/v1/workspace/simulate?since=${since}`, {
      body: draft,
      headers: { 'Content-Type': 'application/yaml' },
    });
    return [body as SimulationReport, describeSimulation(body as SimulationReport)];
  }
  if (command === 'holds list') {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(holdListOptions(values)))
      if (value !== undefined) query.set(name, String(value));
    const { body } = await callService(remote, 'GET', `api/v1/workspace/holds?${query}`);
    return listed(body as HoldList);
  }
  const id = holdReference(words);
  const { body } = await callService(remote, 'GET', `api/v1/holds/${encodeURIComponent(id)}`);
  return shown(body as ReturnType<typeof holdRecord>);
}

function expectVersionOf(values: Values): number | undefined {
  const expected = values['expect-version'];
  if (expected !== undefined && !/^\d{1,15}$/.test(expected))
    throw new UsageError('--expect-version takes the version `approvals export` printed (a whole number)');
  return expected === undefined ? undefined : Number(expected);
}

function applied(
  result: { version: number; items_changed: string[]; webhook_secret?: string },
  file: string,
  where: string,
): [object, string] {
  const changed = result.items_changed.length;
  const text = `Applied ${file} to ${where}: ${changed === 0 ? 'nothing changed' : `${changed} ${changed === 1 ? 'item' : 'items'} changed`}, configuration version ${result.version}.`;
  // Shown this once, as the service answers it: nothing can show it again.
  const secret = result.webhook_secret
    ? `\nThe webhook's signing secret (shown once; keep it with the receiver):\n${result.webhook_secret}`
    : '';
  return [result, text + secret];
}

function exported(config: object, version: number, where: string): [object, string] {
  return [
    config,
    `# ${where}, configuration version ${version}: \`approvals apply --expect-version ${version}\` applies this file only if nothing changed since.\n${stringify(config).trimEnd()}`,
  ];
}

type HoldList = Awaited<ReturnType<typeof listHoldRecords>>;

const HOLD_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'];

function holdListOptions(values: Values) {
  const { status, tool, agent, before } = values;
  if (status !== undefined && !HOLD_STATUSES.includes(status))
    throw new UsageError(`--status must be one of ${HOLD_STATUSES.join(', ')}`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError('--limit must be 1-100');
  if (before !== undefined && !HOLD_REFERENCE_PATTERN.test(before))
    throw new UsageError('--before takes a hold reference (svc_pa_…)');
  return { status, tool, agent, before, limit };
}

function holdReference(words: string[]): string {
  const id = words[2];
  if (!id || words.length > 3) throw new UsageError('holds show needs one hold reference');
  if (!HOLD_REFERENCE_PATTERN.test(id)) throw new UsageError('a hold reference looks like svc_pa_…');
  return id;
}

function listed(list: HoldList): [object, string] {
  const lines = list.holds.map(
    (h) =>
      `${h.id}  ${h.created_at}  ${h.status.padEnd(12)} ${h.connection}/${h.tool_name} by ${h.agent_identity.id}: ${h.arguments_summary}`,
  );
  if (list.next_before) lines.push(`More: --before ${list.next_before}`);
  return [list, lines.join('\n') || 'No holds.'];
}

function shown(record: ReturnType<typeof holdRecord>): [object, string] {
  return [record, stringify(record).trimEnd()];
}

/** The break a re-anchor names, as found by the command, and as the database recorded it. */
function breakText(done: { break: ChainBreak | null; recorded_break: ChainBreak | null }): string {
  const text = (found: ChainBreak) => `${found.reason} at seq ${found.seq}`;
  const parts = [
    done.break ? `the break found (${text(done.break)})` : 'no break this command can see',
    ...(done.recorded_break ? [`the break recorded in the database (${text(done.recorded_break)})`] : []),
  ];
  return `${parts.join(' and ')} ${parts.length > 1 ? 'are' : 'is'}`;
}

/** A verification that ran and found the evidence not intact (exit 3). */
class ChainInvalid extends Error {
  readonly result: object;
  constructor(result: object, reason: string) {
    super(reason);
    this.result = result;
  }
}

/** A verification's answer: the result when valid; otherwise exit 3 with the reason (and the result with --json). */
function verdict(
  result: { valid: boolean; checked: number; first_invalid: { seq: number; reason: string } | null },
  what: string,
): [object, string] {
  if (!result.valid) {
    const problem = result.first_invalid;
    throw new ChainInvalid(
      result,
      `${what} is not intact: ${problem ? `${problem.reason} at seq ${problem.seq}` : 'signature invalid'}`,
    );
  }
  return [result, `The ${what} is intact: ${result.checked} entries checked.`];
}

/** A checkpoint as kept: a checkpoints-list item, an evidence.checkpoint event body, or an export header. */
function readCheckpoint(file: string): Checkpoint {
  let value: unknown;
  try {
    value = JSON.parse(readText(file));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${file} is not JSON`);
  }
  const outer = value as { data?: unknown; checkpoint?: unknown } | null;
  const cp = (outer?.data ?? outer?.checkpoint ?? value) as Partial<Checkpoint> | null;
  if (
    !cp ||
    !Number.isSafeInteger(cp.seq) ||
    [cp.hash, cp.signed_at, cp.key_id, cp.signature].some((field) => typeof field !== 'string')
  )
    throw new UsageError(`${file} holds no checkpoint ({ seq, hash, signed_at, key_id, signature })`);
  const { seq, hash, signed_at, key_id, signature } = cp as Checkpoint;
  return { seq, hash, signed_at, key_id, signature };
}

/** `verify --export`: the SDK's offline check, with the key the auditor pinned; no database needed. */
async function verifyExportFile(values: Values): Promise<[object, string]> {
  const file = required(values, 'export');
  const keyText = readText(required(values, 'key'));
  let keys: TrustedKeys = keyText;
  if (!keyText.trimStart().startsWith('-----BEGIN')) {
    try {
      keys = JSON.parse(keyText) as TrustedKeys;
    } catch {
      throw new UsageError('--key must be a PEM public key or the JSON of /.well-known/approvals-audit-key');
    }
  }
  if (!existsSync(file)) throw new UsageError(`cannot read ${file}`);
  const checkpoint = values.against === undefined ? undefined : readCheckpoint(values.against);
  const result = await verifyEvidenceExport(createReadStream(file, 'utf8'), { keys, checkpoint });
  return verdictWithSignatures(result, createReadStream(file, 'utf8'), `export ${file}`);
}

/**
 * The verdict on a chain, and when it is intact, on each passkey-signed decision in it, checked against
 * its member's enrolled key as the SDK's verifySignedDecisions does (docs/evidence.md).
 */
async function verdictWithSignatures(
  result: { valid: boolean; checked: number; first_invalid: { seq: number; reason: string } | null },
  exported: AsyncIterable<string | Buffer>,
  what: string,
): Promise<[object, string]> {
  if (!result.valid) return verdict(result, what);
  const signed = await verifySignedDecisions(entriesOf(exported));
  const bad = signed.invalid[0];
  const checked = {
    ...result,
    signed_decisions: signed,
    ...(bad
      ? { valid: false, first_invalid: { seq: bad.seq, reason: `signed_decision_${bad.reason}` } }
      : {}),
  };
  const [json, text] = verdict(checked, what);
  return [json, signed.checked > 0 ? `${text} ${signed.checked} passkey-signed decisions verified.` : text];
}

/** The entries of an export (its text in chunks), after its header line. */
async function* entriesOf(exported: AsyncIterable<string | Buffer>) {
  for await (const line of createInterface({ input: Readable.from(exported), crlfDelay: Infinity })) {
    const value = line.trim() ? (JSON.parse(line) as { seq?: unknown; type?: unknown }) : null;
    if (typeof value?.seq === 'number' && typeof value.type === 'string') yield value as EvidenceEntry;
  }
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`cannot read ${file}`);
  }
}

/** `--v1 6000` → 6000; `--v1 default` → null (the deployment's setting). */
function limitOption(name: LimitName, text: string): number | null {
  if (text === 'default') return null;
  const value = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= MAX_RATE_LIMIT)) throw new UsageError(`--${name} must be ${LIMIT_RANGE}`);
  return value;
}

function describeLimits(limits: WorkspaceLimits): string {
  const source = (limit: WorkspaceLimits['v1']) =>
    limit.source === 'workspace' ? 'set for this workspace' : 'the deployment default';
  const mcp = limits.mcp.limit === 0 ? 'no limit' : `${limits.mcp.limit} a minute per API key`;
  return [
    `Core API (--v1): ${limits.v1.limit} requests a minute per bucket (${source(limits.v1)})`,
    `MCP tool calls (--mcp): ${mcp} (${source(limits.mcp)})`,
  ].join('\n');
}

/** `--since 30d` → milliseconds. */
function duration(text: string): number {
  const ms = lookBackMs(text);
  if (ms === undefined) throw new UsageError('--since must look like 30d, 12h or 90m');
  return ms;
}

function describeSimulation(report: SimulationReport): string {
  const lines = [
    `Replayed ${report.holds} holds from ${report.period.from} to ${report.period.to}` +
      ` (${report.rules.current} rules now, ${report.rules.draft} in the draft).`,
    `${report.changed} would be decided differently, ${report.unchanged} the same.`,
    ...report.transitions.map((t) => `  ${t.from} -> ${t.to}: ${t.count}`),
  ];
  const pending = report.pending.reduce((sum, p) => sum + p.holds, 0);
  if (pending > 0) lines.push(`The draft makes ${pending} of them pending:`);
  for (const p of report.pending) lines.push(`  ${p.rule}: ${p.holds}; ${followUpsText(p)}`);
  if (report.examples.length > 0) lines.push('Examples:');
  for (const e of report.examples) {
    const side = (d: typeof e.actual, notes: string[] = []) =>
      `${d.effect}${d.effect === 'approval' ? ` x${d.approvals_required}, ${d.timeout_minutes} min` : ''} (${[d.rule, ...notes].join('; ')})`;
    const mismatches = e.draft.type_mismatches.map(describeTypeMismatch);
    // The follow-ups of a hold the draft makes pending, when it has any.
    const followUps = e.draft.remind || e.draft.escalate.length > 0 ? `; ${followUpsText(e.draft)}` : '';
    lines.push(
      `  ${e.id} ${e.created_at} ${e.connection}/${e.tool_name} by ${e.agent}: ${side(e.actual)} -> ${side(e.draft, mismatches)}${followUps}`,
    );
  }
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    const words = argv.filter((arg) => !arg.startsWith('-'));
    process.stderr.write(usageAnswer((error as Error).message, words));
    return 2;
  }
  if (parsed.values.help) {
    // `approvals apply --help`: that command's usage; otherwise every command's.
    const lines = parsed.positionals.length > 0 ? usageOf(parsed.positionals.slice(0, 2)) : [];
    process.stdout.write(
      lines.length > 0 ? `${lines.map((line) => `usage: approvals ${line}`).join('\n')}\n` : `${USAGE}\n`,
    );
    return 0;
  }
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
    const offline = parsed.positionals.join(' ') === 'verify' && parsed.values.export !== undefined;
    const remote = offline ? null : remoteOf(parsed.values);
    if (remote) {
      const [result, text] = await runRemote(remote, parsed.positionals, parsed.values);
      process.stdout.write(parsed.values.json ? `${JSON.stringify(result)}\n` : `${text}\n`);
      return 0;
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
    if (!offline) ctx = await openContext(config);
    const answer = offline
      ? await verifyExportFile(parsed.values)
      : await run(ctx!, parsed.positionals, parsed.values);
    if (answer)
      process.stdout.write(parsed.values.json ? `${JSON.stringify(answer[0])}\n` : `${answer[1]}\n`);
    return 0;
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
