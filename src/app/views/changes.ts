/**
 * Approve with changes on a decision form (docs/rules.md): a box for each argument the rule lets an
 * approver change, filled with its value as the call would run; and, once an approver changed the
 * call, what they changed beside what was submitted, so the next approver sees what they approve.
 */
import { canonicalJson } from '../../../packages/sdk/src/canonical-json.ts';
import { typedText } from '../../domain/edits.ts';
import type { Hold } from '../../domain/hold.ts';
import { readPath } from '../../domain/rules.ts';
import { changeField } from '../forms/changes.ts';
import { type Html, html, when } from '../html.ts';

const valueAt = (args: Record<string, unknown>, path: string) => readPath(args, path.split('.')).value;

/** The boxes and their button, folded under "Approve with changes"; nothing when nothing is editable. */
export function changeBoxes(hold: Hold, editable: readonly string[]): Html | null {
  if (editable.length === 0) return null;
  const current = hold.changedArguments ?? hold.arguments;
  return html`<details class="changes">
    <summary>Approve with changes</summary>
    <p class="muted">
      The rule lets you change these before approving; its conditions are checked again. Text as typed,
      numbers and true/false as such, anything else as JSON.
    </p>
    ${editable.map((path, index) => {
      const id = `change-${hold.id}-${index}`;
      return html`<label for="${id}">${path}</label>
        <input
          id="${id}"
          type="text"
          name="${changeField(path)}"
          value="${typedText(valueAt(current, path))}"
          spellcheck="false"
          autocomplete="off"
        />`;
    })}
    <div class="buttons">
      <button type="submit" name="verdict" value="approve_changed" class="approve">
        Approve with changes
      </button>
    </div>
  </details>`;
}

/** What an approver changed (four eyes: before the next approval), each with its submitted value. */
export function changedView(hold: Hold): Html | null {
  const changed = hold.changedArguments;
  if (changed === null) return null;
  const paths = [...new Set([...Object.keys(changed), ...Object.keys(hold.arguments)])].filter(
    (key) => canonicalJson(changed[key] ?? null) !== canonicalJson(hold.arguments[key] ?? null),
  );
  return html`<div class="changed-arguments" role="note">
    <strong>Changed by an approver</strong> — an approval approves the call as changed:
    <ul>
      ${paths.map(
        (key) =>
          html`<li>
            <code>${key}</code>:
            ${typedText(changed[key])}${when(
              key in hold.arguments,
              () => html` <span class="muted">(submitted: ${typedText(hold.arguments[key])})</span>`,
            )}
          </li>`,
      )}
    </ul>
  </div>`;
}
