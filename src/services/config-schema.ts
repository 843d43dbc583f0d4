/**
 * The schema of the file `approvals apply` takes (decisions.md, "The file apply takes"): each part of
 * the workspace and the checks within one part. Checks across parts are in config-cross-check.ts.
 */
import { z } from 'zod';
import { compilePattern, OPERATORS } from '../domain/rules.ts';
import { DURATION, durationMs } from '../domain/follow-ups.ts';
import { MAX_CALL_TIMEOUT_SECONDS } from '../domain/mcp-servers.ts';
import { CLOCK_TIME } from '../domain/quiet-hours.ts';
import { isTimeZone } from '../domain/time-zones.ts';
import { signInSchema } from './oidc-config.ts';
import type { Path } from './config-file.ts';

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

const argumentPath = z
  .string()
  .regex(/^[^.\s]+(\.[^.\s]+)*$/, 'must be a dotted path like amount or customer.country')
  .max(200);

const condition = z
  .strictObject({
    arg: argumentPath,
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
    // Whether its holds may be approved in bulk; default true unless four-eyes or signed.
    bulk: z.boolean().optional(),
    // The requesting member may approve their own request in their MCP client (one approval, unsigned).
    self_approval: z.boolean().optional(),
    // The arguments an approver may change before approving (domain/edits.ts).
    editable: z
      .array(argumentPath)
      .min(1)
      .max(50)
      .refine((paths) => new Set(paths).size === paths.length, 'must not name an argument twice')
      .optional(),
    claim: z
      .strictObject({
        minutes: z.int().min(1).max(1440).optional(),
        halts_escalation: z.boolean().optional(),
      })
      .optional(),
    // How long a repeat of a finished MCP call gets the same answer (domain/repeat-window.ts).
    repeat_window_minutes: z.int().min(0).max(1440).optional(),
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
        'bulk',
        'self_approval',
        'editable',
        'claim',
      ] as const) {
        if (r[field] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [field], message: `only an approval rule has ${field}` });
        }
      }
    }
    if (r.effect === 'allow' && r.repeat_window_minutes !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['repeat_window_minutes'],
        message: 'an allow rule has no repeat_window_minutes: each allowed call runs',
      });
    }
    // Four eyes need another person, and a signature a passkey, which no MCP client gives.
    if (r.self_approval && (r.approvals_required ?? 1) > 1)
      ctx.addIssue({
        code: 'custom',
        path: ['self_approval'],
        message: 'needs approvals_required 1: with four eyes, another person approves',
      });
    if (r.self_approval && r.signed)
      ctx.addIssue({
        code: 'custom',
        path: ['self_approval'],
        message: 'cannot go with signed: an MCP client cannot give a passkey signature',
      });
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

const DIGEST_ERROR = 'must be a whole number of minutes from 0 to 60';
const digestMinutes = z
  .number({ error: DIGEST_ERROR })
  .int({ error: DIGEST_ERROR })
  .min(0, { error: DIGEST_ERROR })
  .max(60, { error: DIGEST_ERROR });

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
  // The member's own digest window (0: each request at once); absent: the workspace's.
  digest_minutes: digestMinutes.nullable().optional(),
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

export const configSchema = z.strictObject({
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
  // A member's requests and reminders within this window go as one message per channel (0: each at once).
  notifications: z.strictObject({ digest_minutes: digestMinutes }).optional(),
  // The Teams channel (a `19:…@thread.tacv2` conversation id) its waiting holds are posted to; null: none.
  teams: z
    .strictObject({
      channel: z
        .string()
        .regex(
          /^19:[A-Za-z0-9_-]{1,200}@thread\.(?:tacv2|skype)$/,
          'must be a Teams channel id like 19:…@thread.tacv2',
        ),
    })
    .nullable()
    .optional(),
  // `require_passkey: true`: every approval carries the approver's passkey signature over the action.
  approvals: z.strictObject({ require_passkey: z.boolean() }).optional(),
  // Who may allow an OAuth client (a hosted assistant) to call the workspace's MCP servers.
  oauth: z.strictObject({ grant_role: z.enum(['admin', 'approver']) }).optional(),
  // `require_bound: true`: holds from API keys not bound to an agent identity are refused.
  keys: z.strictObject({ require_bound: z.boolean() }).optional(),
  // Sign-in with the company's identity provider (OpenID Connect); null: none.
  sign_in: signInSchema,
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
