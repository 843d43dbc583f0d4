/**
 * A hold's arguments as a person reads them: a tree of nested `<details>` (collapsible without a
 * script), every value on its own line and wrapped, never cut by the layout. Hidden characters (line
 * breaks, bidi overrides, zero widths) are shown escaped, so what is approved is what is seen. The tree
 * is bounded: past `budget` characters the rest is left out, and the view says how much and links to
 * the full JSON.
 */
import { jsonLine, nameText } from '../../domain/summary.ts';
import { type Html, html } from '../html.ts';

export interface ArgumentsOptions {
  /** Dotted paths (as rules name arguments: `payee.iban`, `items.0`) of values to mark as why it waits. */
  highlight?: readonly string[];
  /** The full arguments as JSON (for the inbox: `/app/holds/<id>/arguments.json`), linked when some are left out. */
  fullJsonHref?: string | null;
  /** At most this many characters of keys and values are shown (each value counts at least 10). */
  budget?: number;
}

export const DEFAULT_ARGUMENTS_BUDGET = 20_000;

/** Levels open by default; deeper ones are open only on the way to a marked value. */
const OPEN_DEPTH = 2;
/** What each node counts against the budget besides its text, so many tiny fields are bounded too. */
const NODE_COST = 10;

interface Walk {
  left: number;
  /** Values not shown at all. */
  omitted: number;
  /** Characters of values shown in part. */
  cut: number;
  highlight: ReadonlySet<string>;
}

const isTree = (value: unknown): value is Record<string, unknown> | unknown[] =>
  value !== null && typeof value === 'object';

const countLeaves = (value: unknown): number =>
  isTree(value) ? Object.values(value).reduce<number>((sum, item) => sum + countLeaves(item), 0) || 1 : 1;

function leaf(value: unknown, walk: Walk): Html {
  const text = jsonLine(value);
  const type = value === null ? 'null' : typeof value;
  if (text.length <= walk.left) {
    walk.left -= text.length;
    return html`<span class="value ${type}">${text}</span>`;
  }
  const shown = text.slice(0, walk.left);
  walk.cut += text.length - shown.length;
  walk.left = 0;
  return html`<span class="value ${type}">${shown}</span
    ><span class="cut">… ${text.length - shown.length} more characters in the full JSON</span>`;
}

function node(key: string, value: unknown, path: string, depth: number, walk: Walk): Html | null {
  if (walk.left <= 0) {
    walk.omitted += countLeaves(value);
    return null;
  }
  walk.left -= key.length + NODE_COST;
  const marked = walk.highlight.has(path);
  const label = html`<span class="key">${nameText(key)}</span>:`;
  if (!isTree(value)) {
    const shown = leaf(value, walk);
    return html`<li class="${marked ? 'held' : null}">
      ${label} ${marked ? html`<mark>${shown}</mark>` : shown}
    </li>`;
  }
  const entries = Object.entries(value);
  const size = Array.isArray(value)
    ? `[${entries.length} item${entries.length === 1 ? '' : 's'}]`
    : `{${entries.length} field${entries.length === 1 ? '' : 's'}}`;
  if (entries.length === 0)
    return html`<li>${label} <span class="value">${Array.isArray(value) ? '[]' : '{}'}</span></li>`;
  const open = depth < OPEN_DEPTH || [...walk.highlight].some((held) => held.startsWith(`${path}.`));
  return html`<li class="${marked ? 'held' : null}">
    <details ${open ? html`open` : null}>
      <summary>
        ${label} ${marked ? html`<mark>${size}</mark>` : html`<span class="size">${size}</span>`}
      </summary>
      ${children(entries, path, depth + 1, walk)}
    </details>
  </li>`;
}

const children = (entries: [string, unknown][], path: string | null, depth: number, walk: Walk) =>
  html`<ul>
    ${entries.map(([key, value]) => node(key, value, path === null ? key : `${path}.${key}`, depth, walk))}
  </ul>`;

export function argumentsView(args: Record<string, unknown>, options: ArgumentsOptions = {}): Html {
  const entries = Object.entries(args);
  if (entries.length === 0) return html`<p class="args muted">No arguments.</p>`;
  const walk: Walk = {
    left: options.budget ?? DEFAULT_ARGUMENTS_BUDGET,
    omitted: 0,
    cut: 0,
    highlight: new Set(options.highlight ?? []),
  };
  const tree = children(entries, null, 0, walk);
  const left = [
    walk.omitted > 0 && `${walk.omitted} value${walk.omitted === 1 ? '' : 's'}`,
    walk.cut > 0 && `${walk.cut} characters`,
  ].filter(Boolean);
  return html`<div class="args">
    ${tree}
    ${
      left.length > 0
        ? html`<p class="args-more" role="note">
            Too large to show whole: ${left.join(' and ')} left out here.
            ${options.fullJsonHref ? html`<a href="${options.fullJsonHref}" download>Download the full JSON</a>` : null}
          </p>`
        : null
    }
  </div>`;
}
