/** The group forms of the Members page: a new group (its name and members), or the members of one. */
import { z } from 'zod';
import type { Form } from '../respond.ts';
import { list, parseForm, type ParsedForm, text } from './form.ts';

export interface GroupValues {
  name: string;
  /** The members' e-mails. */
  members: string[];
}

const GROUP_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** A new group's form; `existing` are the names taken. */
export function parseNewGroupForm(
  form: Form | undefined,
  existing: readonly string[],
): ParsedForm<GroupValues> {
  return parseForm(
    z.object({
      name: text()
        .refine((name) => GROUP_NAME.test(name), 'Use 1 to 100 characters of A-Z a-z 0-9 _ . -')
        .refine((name) => !existing.includes(name), 'A group with this name exists.'),
      members: list().refine((emails) => emails.length > 0, 'Choose at least one member.'),
    }),
    form,
  );
}

/** The members form of the group `name`. */
export function parseGroupMembersForm(form: Form | undefined, name: string): ParsedForm<GroupValues> {
  const parsed = parseForm(
    z.object({
      members: list().refine(
        (emails) => emails.length > 0,
        'Choose at least one member, or delete the group.',
      ),
    }),
    form,
  );
  return parsed.ok ? { ok: true, value: { name, ...parsed.value } } : parsed;
}

/** The fields as posted, to show again with the form's problems. */
export const groupValuesOf = (form: Form | undefined, name?: string): GroupValues => ({
  name: name ?? text().parse(form?.name),
  members: list().parse(form?.members),
});
