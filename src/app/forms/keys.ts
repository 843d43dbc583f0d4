/** The form that creates an API key (API keys page): environment, scope, name, and an optional binding. */
import { z } from 'zod';
import type { FieldIssue } from '../../services/errors.ts';
import type { Form } from '../respond.ts';
import { type FieldErrors, parseForm, type ParsedForm, text } from './form.ts';

export interface NewKeyValues {
  env: string;
  scope: string;
  name: string;
  /** Binding: the agent identity its holds carry, and the member (e-mail) who owns that agent. */
  agent: string;
  owner: string;
}

export const blankKey: NewKeyValues = { env: 'live', scope: 'agent', name: '', agent: '', owner: '' };

// Every field is text, which any form gives: this part cannot fail.
const NewKeyFields = z.object({
  env: text(),
  // A form from before keys had scopes makes an agent key.
  scope: text().transform((scope) => scope || 'agent'),
  name: text(),
  agent: text(),
  owner: text(),
});

const NewKeyForm = z.object({
  env: text().pipe(z.enum(['live', 'test'], 'Choose live or test.')),
  scope: NewKeyFields.shape.scope.pipe(z.enum(['agent', 'admin'], 'Choose agent or admin.')),
  name: text().refine((name) => name.length <= 100, 'Use at most 100 characters.'),
  agent: text(),
  owner: text(),
});

/** The posted form: the values to show again, and the key to make or the problems by field. */
export function parseNewKeyForm(form: Form | undefined): {
  values: NewKeyValues;
  result: ParsedForm<z.output<typeof NewKeyForm>>;
} {
  return { values: NewKeyFields.parse(form ?? {}), result: parseForm(NewKeyForm, form) };
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** Why the key was refused (`name`, `agent` or `owner`), at its field; anything else at the name. */
export function keyIssueErrors(issues: readonly FieldIssue[], message: string): FieldErrors {
  const issue = issues[0];
  if (!issue) return { name: message };
  const at = issue.field in blankKey ? issue.field : 'name';
  return { [at]: `${capitalized(issue.message)}.` };
}
