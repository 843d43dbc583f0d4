/**
 * The member form of the Members page, read into the workspace file's entry for that member. The entry
 * starts from the member as saved, so whatever the form does not carry is kept as it is.
 */
import { z } from 'zod';
import type { FieldIssue } from '../../services/errors.ts';
import type { Form } from '../respond.ts';
import { awayIssue, type AwayValues, awayValuesOf, type MemberEntry, readAwayForm } from './away.ts';
import { attachIssues, type FieldErrors, list, parseForm, type ParsedForm, text } from './form.ts';

export const ROLES = ['admin', 'approver', 'viewer'] as const;
export const CHANNELS = ['email', 'sms', 'slack', 'teams'] as const;

export interface MemberValues {
  email: string;
  name: string;
  role: string;
  phone: string;
  slack_user_id: string;
  teams_user_id: string;
  channels: string[];
  /** The agent identities that act for the member, one per line. */
  agents: string;
  away: AwayValues;
}

export const blankMember: MemberValues = {
  email: '',
  name: '',
  role: 'approver',
  phone: '',
  slack_user_id: '',
  teams_user_id: '',
  channels: ['email'],
  agents: '',
  away: awayValuesOf(undefined),
};

export const memberValuesOf = (m: MemberEntry): MemberValues => ({
  email: m.email,
  name: m.name,
  role: m.role,
  phone: m.phone ?? '',
  slack_user_id: m.slack_user_id ?? '',
  teams_user_id: m.teams_user_id ?? '',
  channels: m.channels ?? ['email'],
  agents: (m.agents ?? []).join('\n'),
  away: awayValuesOf(m),
});

// Every field is text, which any form gives: this part cannot fail.
const MemberFields = z.object({
  email: text(),
  name: text(),
  role: text(),
  // Typed as people write numbers (`+1 (555) 010-0100`); the file's check wants E.164.
  phone: text().transform((phone) => phone.replace(/[\s()-]/g, '')),
  slack_user_id: text(),
  teams_user_id: text(),
  channels: list(),
  agents: text(),
});
type MemberFields = z.output<typeof MemberFields>;

export interface MemberFormContext {
  now: number;
  /** The member as saved; none when one is added. */
  saved: MemberEntry | undefined;
  /** The workspace's members: one added must not be among them already. */
  members: readonly MemberEntry[];
  /** The signed-in admin's role, when the form is their own entry: they may not change it. */
  ownRole: string | undefined;
}

const isOneOf = <T extends string>(choices: readonly T[], value: string): value is T =>
  (choices as readonly string[]).includes(value);

/** What the file's own check cannot know: the roles and channels offered, and what a channel needs. */
const checkedFields = (context: MemberFormContext) =>
  MemberFields.superRefine((m, issues) => {
    const issue = (field: string, message: string) =>
      issues.addIssue({ code: 'custom', path: [field], message });
    if (!context.saved && context.members.some((other) => sameEmail(other.email, m.email)))
      issue('email', 'Is already a member of this workspace.');
    if (context.ownRole !== undefined && m.role !== context.ownRole)
      issue('role', 'You cannot change your own role. Ask another admin.');
    else if (!isOneOf(ROLES, m.role)) issue('role', 'Choose admin, approver or viewer.');
    if (!m.channels.every((c) => isOneOf(CHANNELS, c)))
      issue('channels', 'Choose among e-mail, SMS, Slack and Teams.');
    else if (m.channels.includes('sms') && !m.phone) issue('phone', 'SMS needs a phone number.');
    else if (m.channels.includes('slack') && !m.slack_user_id)
      issue('slack_user_id', 'Slack needs a Slack user id.');
    else if (m.channels.includes('teams') && !m.teams_user_id)
      issue('teams_user_id', 'Teams needs a Teams user id.');
  });

/** The saved entry with the form's fields over it; an empty field clears its key. */
function entryOf(m: MemberFields, away: Partial<MemberEntry>, saved: MemberEntry | undefined): MemberEntry {
  const agents = [...new Set(m.agents.split('\n').map((agent) => agent.trim()))].filter(Boolean);
  const entry: Record<string, unknown> = {
    ...saved,
    email: saved?.email ?? m.email,
    name: m.name,
    role: m.role,
    phone: m.phone || undefined,
    slack_user_id: m.slack_user_id || undefined,
    teams_user_id: m.teams_user_id || undefined,
    channels: m.channels,
    agents: agents.length > 0 ? agents : undefined,
    ...away,
  };
  return Object.fromEntries(Object.entries(entry).filter(([, value]) => value !== undefined)) as MemberEntry;
}

/** The posted member form: the values to show again, and the entry or the problems by field. */
export function parseMemberForm(
  form: Form | undefined,
  context: MemberFormContext,
): { values: MemberValues; result: ParsedForm<MemberEntry> } {
  const away = readAwayForm(form ?? {}, context.now, context.saved?.delegate);
  const fields = MemberFields.parse(form ?? {});
  // An edit's e-mail is the saved one: the member's URL names them, the form does not.
  const values = { ...fields, email: context.saved?.email ?? fields.email, away: away.values };
  const checked = parseForm(checkedFields(context), form);
  const errors: FieldErrors = { ...away.errors, ...(checked.ok ? {} : checked.errors) };
  if (Object.keys(errors).length > 0) return { values, result: { ok: false, errors } };
  return { values, result: { ok: true, value: entryOf(fields, away.change, context.saved) } };
}

/**
 * Attaches the file's issues about the member at `at` (`members.3`) to the form's fields: `agents.0` to
 * the agents, `delegate.to` to the out-of-office fieldset in words. Returns the other issues.
 */
export function attachMemberIssues(issues: readonly FieldIssue[], at: string, errors: FieldErrors) {
  const byPath: FieldErrors = {};
  const elsewhere = attachIssues(issues, at, byPath);
  for (const [path, message] of Object.entries(byPath)) {
    const parts = path.split('.');
    const away = awayIssue(parts, message);
    errors[away?.[0] ?? parts[0]!] ??= away?.[1] ?? message;
  }
  return elsewhere;
}

/** E-mails name the same member whatever their case. */
export const sameEmail = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
