/**
 * The addresses part of a member's own settings form (`/app/settings`): where their approval requests
 * go besides e-mail. The away part (time zone, quiet hours, delegation) is `forms/away.ts`.
 */
import { z } from 'zod';
import type { Form } from '../respond.ts';
import { text } from './form.ts';
import type { MemberEntry } from './away.ts';

export const ADDRESS_NAMES = ['phone', 'slack_user_id', 'teams_user_id'] as const;
export type AddressName = (typeof ADDRESS_NAMES)[number];
export type AddressValues = Record<AddressName, string>;

const AddressesForm = z.object({
  // Typed as people write numbers (`+1 (555) 010-0100`); the file's check wants E.164.
  phone: text().transform((phone) => phone.replace(/[\s()-]/g, '')),
  slack_user_id: text(),
  teams_user_id: text(),
});

export const addressValuesOf = (member: MemberEntry): AddressValues => ({
  phone: member.phone ?? '',
  slack_user_id: member.slack_user_id ?? '',
  teams_user_id: member.teams_user_id ?? '',
});

/**
 * The addresses a posted form sets (an empty field clears its address), as typed and as the change to
 * the member's entry; null for a form without them (from before they were on it): it keeps them.
 */
export function readAddresses(form: Form): { values: AddressValues; change: Partial<MemberEntry> } | null {
  if (!ADDRESS_NAMES.some((name) => typeof form[name] === 'string')) return null;
  // Every field is text, which any form gives: parsing cannot fail.
  const values = AddressesForm.parse(form);
  const change: Partial<MemberEntry> = {};
  for (const name of ADDRESS_NAMES) change[name] = values[name] || undefined;
  return { values, change };
}

/**
 * The member's own digest window as typed (empty: the workspace's), and the change to their entry; null
 * for a form without it. The workspace file's check says what is wrong with a value, beside the field.
 */
export function readDigestMinutes(form: Form): { value: string; change: Partial<MemberEntry> } | null {
  if (typeof form.digest_minutes !== 'string') return null;
  const value = form.digest_minutes.trim();
  return { value, change: { digest_minutes: value === '' ? undefined : Number(value) } };
}
