/**
 * Reading a posted form with a zod schema. A form arrives as strings (a field given twice as a list):
 * the field schemas below turn it into values, and every problem is attached to its field by path
 * (`rules.0.approvers`, `url`), never found again by matching message text.
 */
import { z } from 'zod';
import type { FieldIssue } from '../../services/errors.ts';
import type { Form } from '../respond.ts';

/** A form's problems by field path (dotted); the first problem of a field wins. */
export type FieldErrors = Record<string, string>;

export type ParsedForm<T> = { ok: true; value: T } | { ok: false; errors: FieldErrors };

const lastString = (value: unknown): string => {
  const last: unknown = Array.isArray(value) ? value.at(-1) : value;
  return typeof last === 'string' ? last.trim() : '';
};

/** A text field: its last value, trimmed; '' when absent. Chain checks on `text()` as on `z.string()`. */
export const text = () => z.preprocess(lastString, z.string());

/** A field that may repeat (checkboxes of one name, a multi-select): every non-empty value, trimmed. */
export const list = () =>
  z.preprocess(
    (value) =>
      [value]
        .flat()
        .filter((item): item is string => typeof item === 'string')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    z.array(z.string()),
  );

/** A checkbox: true when sent with any value. */
export const checkbox = () => z.preprocess((value) => lastString(value) !== '', z.boolean());

/** Parses `form` with `schema`; on failure, each issue's message under its path. Throws nothing. */
export function parseForm<S extends z.ZodType>(schema: S, form: Form | undefined): ParsedForm<z.output<S>> {
  const result = schema.safeParse(form ?? {});
  if (result.success) return { ok: true, value: result.data };
  const errors: FieldErrors = {};
  for (const issue of result.error.issues)
    errors[issue.path.map(String).join('.') || '(form)'] ??= issue.message;
  return { ok: false, errors };
}

/**
 * Attaches the issues a service raised about a workspace file (`members.3.phone`) to the fields of the
 * form that edited the item at `at` (`members.3`): `phone` gets its message unless it has one already.
 * Returns the issues that belong to no field of this form, for the page's summary.
 */
export function attachIssues(issues: readonly FieldIssue[], at: string, errors: FieldErrors): FieldIssue[] {
  const prefix = `${at}.`;
  const elsewhere: FieldIssue[] = [];
  for (const issue of issues) {
    if (issue.field.startsWith(prefix)) errors[issue.field.slice(prefix.length)] ??= issue.message;
    else elsewhere.push(issue);
  }
  return elsewhere;
}
