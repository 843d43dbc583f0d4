/**
 * The file `approvals apply` takes (decisions.md, "The file apply takes"): YAML or JSON, checked as a
 * whole; every problem is reported with its line in the file.
 */
import { isMap, isNode, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import { z } from 'zod';
import { compilePattern, OPERATORS, type RuleDefinition } from '../domain/rules.ts';
import { DURATION, durationMs } from '../domain/follow-ups.ts';
import { NON_FINITE_MESSAGE, nonFiniteNumberPath } from '../domain/json-limits.ts';
import { MAX_CALL_TIMEOUT_SECONDS } from '../domain/mcp-servers.ts';
import { CLOCK_TIME } from '../domain/quiet-hours.ts';
import { isTimeZone } from '../domain/time-zones.ts';
import { type FieldIssue, ServiceError } from './errors.ts';

const TOOL_NAME = /^[A-Za-z0-9_.:/-]{1,200}$/;
const CALL_TIMEOUT_ERROR = `must be a whole number of seconds from 1 to ${MAX_CALL_TIMEOUT_SECONDS}`;
const TOOL_GLOB = /^[A-Za-z0-9_.:/*?-]{1,200}$/;

/**
 * Where the service sends requests (webhooks, MCP upstreams). No user:password in it: the URL is
 * kept in plain text and in the evidence, which cannot be scrubbed later; credentials go in headers.
 */
const targetUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
  .max(2000)
  // Runs even when the URL check failed (zod goes on), so the URL may not parse.
  .refine((url) => {
    const parsed = URL.parse(url);
    return !parsed?.username && !parsed?.password;
  }, 'must not carry credentials (user:password@); send them as headers');

const condition = z
  .strictObject({
    arg: z
      .string()
      .regex(/^[^.\s]+(\.[^.\s]+)*$/, 'must be a dotted path like amount or customer.country')
      .max(200),
    op: z.enum(OPERATORS),
    value: z.unknown().optional(),
  })
  .superRefine((c, ctx) => {
    const problem = (message: string) => ctx.addIssue({ code: 'custom', path: ['value'], message });
    if (c.op === 'exists') {
      if (c.value !== undefined && typeof c.value !== 'boolean') problem('must be true or false for exists');
    } else if (c.value === undefined) {
      problem(`is required for ${c.op}`);
    } else if ((c.op === 'in' || c.op === 'not_in') && !Array.isArray(c.value)) {
      problem(`must be a list for ${c.op}`);
    } else if (
      ['gt', 'gte', 'lt', 'lte'].includes(c.op) &&
      typeof c.value !== 'number' &&
      typeof c.value !== 'string'
    ) {
      problem(`must be a number or a string for ${c.op}`);
    } else if (c.op === 'matches') {
      if (typeof c.value !== 'string') return problem('must be a regular expression for matches');
      try {
        compilePattern(c.value);
      } catch {
        problem('is not a valid RE2 regular expression (no backreferences or lookaround)');
      }
    }
  });

const duration = z.string().regex(DURATION, 'must be a duration like 30m, 2h or 1d');

/** `[30m, 5m]` (before the deadline) or `{ before: [30m], every: 1h }`; stored as the latter. */
const remind = z
  .union([
    z.array(duration).min(1).max(10),
    z.strictObject({ before: z.array(duration).max(10).optional(), every: duration.optional() }),
  ])
  .transform((value) => (Array.isArray(value) ? { before: value } : value))
  .refine((value) => value.before?.length || value.every, 'must name reminders: before, every or both');

const approverList = z.array(z.string().min(1).max(254)).max(100);

const escalationStep = z.strictObject({ after: duration, to: approverList.min(1) });

/** One step `{ after, to }` or a list of up to five; stored as a list. */
const escalate = z
  .union([escalationStep, z.array(escalationStep).min(1).max(5)])
  .transform((value) => (Array.isArray(value) ? value : [value]));

const rule = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    connection: z.string().min(1).max(200).optional(),
    tool: z.string().regex(TOOL_GLOB, 'must be a tool name or a glob (* and ?) of A-Z a-z 0-9 _ . : / -'),
    agent: z.string().min(1).max(200).optional(),
    when: z.array(condition).max(50).optional(),
    frequency: z
      .strictObject({
        more_than: z.int().min(0).max(1_000_000_000),
        per: z.enum(['minute', 'hour', 'day']),
        by: z.enum(['tool', 'agent', 'tool_and_agent']).default('tool'),
      })
      .optional(),
    effect: z.enum(['allow', 'approval', 'deny']),
    approvers: approverList.optional(),
    approvals_required: z.int().min(1).max(20).optional(),
    // No upper bound in the contract; this one only keeps the deadline a valid date.
    timeout_minutes: z.int().min(1).max(1_000_000_000).optional(),
    reason: z.string().max(500).nullable().optional(),
    remind: remind.optional(),
    escalate: escalate.optional(),
    // Each approval carries the approver's passkey signature over the exact action.
    signed: z.boolean().optional(),
  })
  .superRefine((r, ctx) => {
    if (r.effect !== 'approval') {
      for (const field of [
        'approvers',
        'approvals_required',
        'timeout_minutes',
        'remind',
        'escalate',
        'signed',
      ] as const) {
        if (r[field] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [field], message: `only an approval rule has ${field}` });
        }
      }
    }
    if (r.effect !== 'deny' && r.reason) {
      ctx.addIssue({ code: 'custom', path: ['reason'], message: 'only a deny rule has a reason' });
    }
    // A follow-up at or after the deadline would never happen: said now rather than never. (zod runs
    // this also when a part failed its own check, so a value that is not a duration is skipped.)
    const deadline = (r.timeout_minutes ?? 240) * 60_000;
    const ms = (value: unknown) =>
      typeof value === 'string' && DURATION.test(value) ? durationMs(value) : NaN;
    const tooLate = (path: Path) =>
      ctx.addIssue({ code: 'custom', path, message: 'must be shorter than timeout_minutes' });
    const remind = Array.isArray(r.remind) ? undefined : r.remind;
    remind?.before?.forEach((before, index) => {
      if (ms(before) >= deadline) tooLate(['remind', 'before', index]);
    });
    if (ms(remind?.every) >= deadline) tooLate(['remind', 'every']);
    let previous = 0;
    (Array.isArray(r.escalate) ? r.escalate : []).forEach((step, index) => {
      const after = ms(step?.after);
      if (Number.isNaN(after)) return;
      if (after >= deadline) tooLate(['escalate', index, 'after']);
      else if (after <= previous)
        ctx.addIssue({
          code: 'custom',
          path: ['escalate', index, 'after'],
          message: 'must be later than the step before',
        });
      previous = after;
    });
  });

const member = z.strictObject({
  email: z.email('must be an e-mail address').max(254),
  name: z.string().trim().min(1).max(200),
  role: z.enum(['admin', 'approver', 'viewer']),
  phone: z
    .string()
    .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number like +15550100')
    .nullable()
    .optional(),
  slack_user_id: z
    .string()
    .regex(/^[UW][A-Z0-9]{1,20}$/, 'must be a Slack user id like U01')
    .nullable()
    .optional(),
  teams_user_id: z
    .string()
    .regex(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
      'must be a Microsoft Entra object id like 00000000-0000-0000-0000-000000000000',
    )
    .nullable()
    .optional(),
  channels: z.array(z.enum(['email', 'sms', 'slack', 'teams'])).optional(),
  time_zone: z
    .string()
    .max(64)
    .refine(isTimeZone, 'must be an IANA time zone like Europe/Berlin')
    .nullable()
    .optional(),
  quiet_hours: z
    .strictObject({
      from: z.string().regex(CLOCK_TIME, 'must be a time like 20:00'),
      to: z.string().regex(CLOCK_TIME, 'must be a time like 08:00'),
      weekends: z.boolean().default(false),
    })
    .refine((quiet) => quiet.from !== quiet.to, 'must end at another time than it starts')
    .nullable()
    .optional(),
  // The agent identities that act for this member: they never decide those agents' holds.
  agents: z.array(z.string().min(1).max(200)).max(100).optional(),
  // Out of office: another member decides in this member's place for a period.
  delegate: z
    .strictObject({
      to: z.email('must be an e-mail address').max(254),
      from: z.iso.datetime({ offset: true, error: 'must be a date and time like 2026-12-01T09:00:00Z' }),
      until: z.iso.datetime({ offset: true, error: 'must be a date and time like 2026-12-08T09:00:00Z' }),
    })
    .refine((d) => Date.parse(d.from) < Date.parse(d.until), 'must end after it starts')
    .nullable()
    .optional(),
});

const configSchema = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  branding: z
    .strictObject({
      logo_url: z
        .url({ protocol: /^https$/, error: 'must be an https URL' })
        .max(2000)
        .nullable()
        .optional(),
      accent_color: z
        .string()
        .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex colour like #0a7')
        .nullable()
        .optional(),
    })
    .optional(),
  members: z.array(member).optional(),
  // Reminders for holds whose deciding rule asks for none (the tool classifications' holds too).
  remind: remind.nullable().optional(),
  groups: z
    .record(
      z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'must be 1-100 characters of A-Z a-z 0-9 _ . -'),
      z.array(z.email('must be an e-mail address')),
    )
    .optional(),
  tools: z
    .array(
      z.strictObject({
        connection: z.string().min(1).max(200),
        tool: z.string().regex(TOOL_NAME, 'must be 1-200 characters of A-Z a-z 0-9 _ . : / -'),
        classification: z.enum(['allow', 'approval', 'deny']),
      }),
    )
    .optional(),
  rules: z.array(rule).max(10_000).optional(),
  webhook: z.strictObject({ url: targetUrl }).nullable().optional(),
  // The channel this workspace's waiting holds are posted to; null: none.
  slack: z
    .strictObject({
      channel: z.string().regex(/^[CG][A-Z0-9]{2,20}$/, 'must be a Slack channel id like C01ABCDEF'),
    })
    .nullable()
    .optional(),
  // `require_passkey: true`: every approval carries the approver's passkey signature over the action.
  approvals: z.strictObject({ require_passkey: z.boolean() }).optional(),
  // Who may allow an OAuth client (a hosted assistant) to call the workspace's MCP servers.
  oauth: z.strictObject({ grant_role: z.enum(['admin', 'approver']) }).optional(),
  // `require_bound: true`: holds from API keys not bound to an agent identity are refused.
  keys: z.strictObject({ require_bound: z.boolean() }).optional(),
  mcp_servers: z
    .array(
      z.strictObject({
        slug: z
          .string()
          .regex(
            /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
            'must be 1-63 lowercase letters, digits or dashes',
          ),
        name: z
          .string()
          .trim()
          .min(1)
          .max(200)
          .refine((name) => name !== 'SDK', 'SDK is the name of the Hold API connection'),
        url: targetUrl,
        // Absent: the stored headers stay while the URL keeps its origin (export leaves them out, so an
        // exported file re-applies cleanly).
        headers: z
          .record(
            z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'must be an HTTP header name'),
            z.string().max(8000),
          )
          .optional(),
        // How long a tools/call may wait for the upstream's answer (progress restarts the clock).
        // Absent: the default, 15 minutes.
        call_timeout_seconds: z
          .number({ error: CALL_TIMEOUT_ERROR })
          .int({ error: CALL_TIMEOUT_ERROR })
          .min(1, { error: CALL_TIMEOUT_ERROR })
          .max(MAX_CALL_TIMEOUT_SECONDS, { error: CALL_TIMEOUT_ERROR })
          .optional(),
      }),
    )
    .max(100)
    .optional(),
});

export type WorkspaceConfig = z.infer<typeof configSchema> & { rules?: RuleDefinition[] };
export type Path = (string | number)[];

export interface ParsedConfig {
  config: WorkspaceConfig;
  /** The line of the file a path points at (1-based), for error messages. */
  lineOf(path: Path): number | undefined;
}

export function configError(issues: FieldIssue[]): ServiceError {
  const text = issues.map((i) => `${i.line ? `line ${i.line}: ` : ''}${i.field}: ${i.message}`).join('; ');
  return new ServiceError('validation_failed', text, issues);
}

/** How an issue's message names the stored rule it is about (the file has no line for it). */
export const storedRuleNote = (rule: string) => `(stored rule "${rule}") `;

/**
 * Checks the workspace as it would be after applying the file: the file's parts, with the stored
 * workspace filling in what the file leaves out (so removing a member a stored rule needs is refused).
 */
export function crossCheck(
  config: WorkspaceConfig,
  stored: {
    members: { email: string; role: string }[];
    groups: Map<string, string[]>;
    rules: RuleDefinition[];
  },
  lineOf: ParsedConfig['lineOf'],
): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const rulesInFile = config.rules !== undefined;
  const issue = (path: Path, message: string) => {
    // A stored rule that the file would break has no line: name it instead.
    const stale = path[0] === 'rules' && !rulesInFile;
    const rule = stale ? stored.rules[path[1] as number] : undefined;
    issues.push({
      field: path.join('.'),
      message: rule ? `${storedRuleNote(rule.name)}${message}` : message,
      line: stale ? undefined : lineOf(path),
      ...(rule && { rule: rule.name }),
    });
  };
  const members =
    config.members?.map((m) => ({ email: m.email.toLowerCase(), role: m.role })) ?? stored.members;
  const roleOf = new Map(members.map((m) => [m.email, m.role]));
  config.members?.forEach((m, index) => {
    if (members.findIndex((other) => other.email === m.email.toLowerCase()) !== index) {
      issue(['members', index, 'email'], 'is listed twice');
    }
  });
  const groups = config.groups
    ? new Map(
        Object.entries(config.groups).map(([name, emails]) => [name, emails.map((e) => e.toLowerCase())]),
      )
    : new Map(
        [...stored.groups].map(([name, emails]) => [name, emails.filter((email) => roleOf.has(email))]),
      );
  for (const [name, emails] of Object.entries(config.groups ?? {})) {
    emails.forEach((email, index) => {
      if (!roleOf.has(email.toLowerCase()))
        issue(['groups', name, index], 'is not a member of the workspace');
      if (emails.findIndex((other) => other.toLowerCase() === email.toLowerCase()) !== index) {
        issue(['groups', name, index], 'is listed twice');
      }
    });
  }
  config.mcp_servers?.forEach((server, index) => {
    const servers = config.mcp_servers!;
    if (servers.findIndex((other) => other.slug === server.slug) !== index) {
      issue(['mcp_servers', index, 'slug'], 'is listed twice');
    }
    if (servers.findIndex((other) => other.name === server.name) !== index) {
      issue(['mcp_servers', index, 'name'], 'is used by another server; it names the connection in rules');
    }
  });
  config.members?.forEach((m, index) => {
    if (!m.delegate) return;
    const to = m.delegate.to.toLowerCase();
    const path = ['members', index, 'delegate', 'to'];
    if (to === m.email.toLowerCase()) issue(path, 'must be another member');
    else if (!roleOf.has(to)) issue(path, 'is not a member of the workspace');
    else if (roleOf.get(to) === 'viewer') issue(path, 'is a viewer; viewers do not decide');
  });
  /** The members an approver entry names, or why it names none (a problem is reported at `path`). */
  const resolve = (approver: string, path: Path): string[] | undefined => {
    const matching = approver.startsWith('role:')
      ? members.filter((m) => `role:${m.role}` === approver).map((m) => m.email)
      : approver.startsWith('group:')
        ? groups.get(approver.slice(6))
        : roleOf.has(approver.toLowerCase())
          ? [approver.toLowerCase()]
          : undefined;
    if (approver.startsWith('role:') && !['role:admin', 'role:approver'].includes(approver)) {
      issue(path, 'must be role:admin or role:approver');
      return undefined;
    }
    if (!matching) {
      issue(
        path,
        approver.startsWith('group:')
          ? 'names no group of the workspace'
          : 'is not a member of the workspace',
      );
    }
    return matching;
  };
  const names = new Set<string>();
  (config.rules ?? stored.rules).forEach((r, index) => {
    if (names.has(r.name)) issue(['rules', index, 'name'], 'is used by another rule; rule names are unique');
    names.add(r.name);
    if (r.effect !== 'approval') return;
    r.escalate?.forEach((step, at) =>
      step.to.forEach((approver, i) => resolve(approver, ['rules', index, 'escalate', at, 'to', i])),
    );
    const eligible = new Set<string>();
    let unresolved = false;
    const approvers = r.approvers?.length ? r.approvers : ['role:admin'];
    approvers.forEach((approver, at) => {
      const path = r.approvers?.length ? ['rules', index, 'approvers', at] : ['rules', index];
      const matching = resolve(approver, path);
      if (!matching) unresolved = true;
      else for (const email of matching) if (roleOf.get(email) !== 'viewer') eligible.add(email);
    });
    const required = r.approvals_required ?? 1;
    if (!unresolved && eligible.size < required) {
      issue(
        r.approvals_required ? ['rules', index, 'approvals_required'] : ['rules', index, 'approvers'],
        `needs ${required} distinct approvers but only ${eligible.size} member(s) can approve`,
      );
    }
  });
  return issues;
}

/** Far above any real workspace file, far below what keeps the parser busy for long. */
const MAX_NODES = 50_000;

/**
 * The file's structure checked before it is read: no alias (a workspace file needs none, and they can
 * multiply a small file), no duplicate key in a mapping, not more than MAX_NODES nodes. The duplicate
 * check is ours, one set per mapping: the YAML library's own (`uniqueKeys`) compares every pair of keys,
 * which a file of many keys turns into seconds on the event loop. Messages never repeat the file's keys.
 */
function structureProblem(
  document: ReturnType<typeof parseDocument>,
  lineCounter: LineCounter,
): FieldIssue | null {
  let nodes = 0;
  let problem: FieldIssue | null = null;
  const at = (node: unknown) =>
    isNode(node) && node.range ? lineCounter.linePos(node.range[0]).line : undefined;
  visit(document, {
    Alias(_, node) {
      problem = { field: '(file)', message: 'uses an alias (*name); write the value out', line: at(node) };
      return visit.BREAK;
    },
    Node(_, node) {
      if (++nodes > MAX_NODES) {
        problem = { field: '(file)', message: `is too large (more than ${MAX_NODES} values)` };
        return visit.BREAK;
      }
      if (!isMap(node)) return undefined;
      const keys = new Set<unknown>();
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        if (keys.has(key)) {
          problem = { field: '(file)', message: 'has a key twice in one mapping', line: at(pair.key) };
          return visit.BREAK;
        }
        keys.add(key);
      }
      return undefined;
    },
  });
  return problem;
}

/**
 * A schema issue in words. Unknown fields are named only when they look like a field name, three at
 * most: a typo is found at once, and an answer never grows with, or repeats, what the file holds.
 */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  const named = issue.keys.filter((key) => /^[A-Za-z_][A-Za-z0-9_-]{0,39}$/.test(key)).slice(0, 3);
  const more = issue.keys.length - named.length;
  const names = named.map((key) => `"${key}"`).join(', ');
  return `unknown field${issue.keys.length === 1 ? '' : 's'}: ${names}${more > 0 ? `${named.length ? ' and ' : ''}${more} more` : ''}`;
}

export function parseConfig(text: string): ParsedConfig {
  const lineCounter = new LineCounter();
  let document: ReturnType<typeof parseDocument>;
  try {
    document = parseDocument(text, { uniqueKeys: false, lineCounter });
  } catch {
    // Nesting deeper than the stack: not a workspace file.
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON' }]);
  }
  if (document.errors.length > 0) {
    const [first] = document.errors;
    const line = first!.linePos?.[0].line;
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON', line }]);
  }
  let value: unknown;
  try {
    const problem = structureProblem(document, lineCounter);
    if (problem) throw configError([problem]);
    value = document.toJS() ?? {};
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    // Nesting deeper than the stack: not a workspace file.
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON' }]);
  }
  const lineOf = (path: Path): number | undefined => {
    for (let length = path.length; length >= 0; length--) {
      const node = document.getIn(path.slice(0, length), true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  // YAML's `.inf` and JSON's `1e400` read as Infinity, which no canonical JSON (the evidence) can hold.
  const nonFinite = nonFiniteNumberPath(value);
  if (nonFinite)
    throw configError([
      { field: nonFinite.join('.') || '(file)', message: NON_FINITE_MESSAGE, line: lineOf(nonFinite) },
    ]);
  const issues: FieldIssue[] = [];
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const path = i.path as Path;
      issues.push({ field: path.join('.') || '(file)', message: issueMessage(i), line: lineOf(path) });
    }
  }
  if (issues.length > 0 || !parsed.success) throw configError(issues);
  return { config: parsed.data as WorkspaceConfig, lineOf };
}
