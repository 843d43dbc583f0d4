/**
 * Approve with changes (docs/rules.md, "Approve with changes"): an approval rule's `editable` names the
 * arguments an approver may change; the changed call is what runs. Pure: the service checks the rule's
 * conditions again on the result (services/decision-changes.ts).
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { readPath } from './rules.ts';

type Args = Record<string, unknown>;

const isObject = (value: unknown): value is Args =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * `base` with each path of `changes` set to its value (objects made on the way); null when a path
 * runs through a value that is not an object (an array, a string), which a change cannot reach into.
 */
export function withChanges(base: Args, changes: Readonly<Args>): Args | null {
  const result = structuredClone(base);
  for (const [path, value] of Object.entries(changes)) {
    const keys = path.split('.');
    let parent: Args = result;
    for (const key of keys.slice(0, -1)) {
      if (!Object.hasOwn(parent, key)) parent[key] = {};
      const next = parent[key];
      if (!isObject(next)) return null;
      parent = next;
    }
    parent[keys.at(-1)!] = value;
  }
  return result;
}

/** `args` without the editable paths: what an edit must leave as it was. */
function fixedPart(args: Args, editable: readonly string[]): Args {
  const result = structuredClone(args);
  for (const path of editable) {
    const keys = path.split('.');
    const { found, value } = readPath(result, keys.slice(0, -1));
    if (found && isObject(value)) delete value[keys.at(-1)!];
  }
  return result;
}

/** Whether `changed` differs from `submitted` only at the editable paths. */
export const onlyEditableChanged = (submitted: Args, changed: Args, editable: readonly string[]) =>
  canonicalJson(fixedPart(submitted, editable)) === canonicalJson(fixedPart(changed, editable));

export const sameArguments = (a: Args, b: Args) => canonicalJson(a) === canonicalJson(b);

/**
 * A value an approver typed for an argument, read as the argument's type as submitted: a string as
 * typed, a number or a boolean as one; anything else (an object, a list, null, an argument not
 * submitted) as JSON. An error in words when the text is not such a value.
 */
export function readTypedValue(
  submitted: { found: boolean; value?: unknown },
  typed: string,
): { value: unknown } | { error: string } {
  const value = submitted.value;
  if (submitted.found && typeof value === 'string') return { value: typed };
  if (submitted.found && typeof value === 'number') {
    const number = Number(typed.trim());
    return typed.trim() !== '' && Number.isFinite(number) ? { value: number } : { error: 'must be a number' };
  }
  if (submitted.found && typeof value === 'boolean') {
    if (typed.trim() === 'true' || typed.trim() === 'false') return { value: typed.trim() === 'true' };
    return { error: 'must be true or false' };
  }
  try {
    return { value: JSON.parse(typed) as unknown };
  } catch {
    return { error: 'must be a JSON value' };
  }
}

/** How a value is shown in an edit box: as `readTypedValue` reads it back. */
export const typedText = (value: unknown) =>
  typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
