/**
 * "Approve with changes" as posted (docs/rules.md): a box `change.<path>` for each editable argument,
 * read as the argument's type (domain/edits.ts). Pure: no I/O.
 */
import { readTypedValue } from '../../domain/edits.ts';
import type { Hold } from '../../domain/hold.ts';
import { readPath } from '../../domain/rules.ts';
import { field, type Form } from '../respond.ts';

/** The form field of an editable argument's box. */
export const changeField = (path: string) => `change.${path}`;

/**
 * The changes typed for the editable paths of `current` (the arguments as they are), by path; each
 * box that cannot be read goes to `errors` under its path. A box not sent leaves its argument be.
 */
export function readChanges(
  form: Form | undefined,
  current: Record<string, unknown>,
  editable: readonly string[],
): { changes: Record<string, unknown>; errors: Record<string, string> } {
  const changes: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const path of editable) {
    if (form?.[changeField(path)] === undefined) continue;
    const submitted = readPath(current, path.split('.'));
    // A box of an argument the call does not have, left empty, adds nothing.
    if (!submitted.found && field(form, changeField(path)) === '') continue;
    const read = readTypedValue(submitted, field(form, changeField(path)));
    if ('error' in read) errors[path] = read.error;
    else changes[path] = read.value;
  }
  return { changes, errors };
}

/** The changes "Approve with changes" sent for `hold`, or what is wrong with its boxes, in words. */
export function formChanges(
  form: Form | undefined,
  hold: Hold,
  editable: readonly string[],
): { changes: Record<string, unknown> } | { problem: string } {
  const read = readChanges(form, hold.changedArguments ?? hold.arguments, editable);
  const wrong = Object.entries(read.errors).map(([path, error]) => `${path} ${error}`);
  return wrong.length > 0 ? { problem: `Changes: ${wrong.join('; ')}.` } : { changes: read.changes };
}
