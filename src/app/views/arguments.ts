/**
 * A hold's arguments as a person reads them: a tree of nested `<details>` (collapsible without a
 * script), every value on its own line and wrapped, never cut by the layout. Hidden characters (line
 * breaks, bidi overrides, zero widths) are shown escaped, so what is approved is what is seen.
 *
 * Every value has its line, and every level is open: no value waits behind a closed fold, however deep
 * it is nested. A long text is folded in place (a `<details>` whose summary gives its beginning and its
 * length, open to read it whole), so a long memo cannot push the amount or the payee off the page; a run
 * of blanks is written as its count (`190 spaces`), so a line never looks empty while it hides a value
 * after the blanks. The values the rule looked at come first, are marked, and fold only past
 * MARKED_INLINE_CHARS (then open). The page is bounded: first
 * each value's line, then the long texts in full, as far as `budget` characters go. What does not fit
 * is said, with a link to the full JSON, and the view is not `complete`: a page offers no Approve then.
 */
import { jsonLine, nameText } from '../../domain/summary.ts';
import { type Html, html } from '../html.ts';

export interface ArgumentsOptions {
  /** Dotted paths (as rules name arguments: `payee.iban`, `items.0`) of values to mark as why it waits. */
  highlight?: readonly string[];
  /** The full arguments as JSON (for the inbox: `/app/holds/<id>/arguments.json`), linked when some are left out. */
  fullJsonHref?: string | null;
  /** At most this many characters of keys and values are shown (each value's line counts NODE_COST more). */
  budget?: number;
}

export interface ArgumentsShown {
  html: Html;
  /** Every value is on the page in full (some maybe folded): only then may a page offer Approve. */
  complete: boolean;
}

/** Room for a hold with a long text or two (a 30,000-character memo), and a page that stays fast at 1 MB. */
export const DEFAULT_ARGUMENTS_BUDGET = 60_000;

/** What each line counts against the budget besides its text (its markup), so many tiny fields are bounded too. */
const NODE_COST = 40;
/** A value longer than this (as JSON) is folded: its line shows its beginning and its length. */
const INLINE_CHARS = 200;
/** A value the rule looked at is folded only when longer than this (an address, a reference, a note). */
const MARKED_INLINE_CHARS = 2_000;
/** How much of a folded value its line shows. */
const PREVIEW_CHARS = 80;

const isTree = (value: unknown): value is Record<string, unknown> | unknown[] =>
  value !== null && typeof value === 'object';

const countLeaves = (value: unknown): number =>
  isTree(value) ? Object.values(value).reduce<number>((sum, item) => sum + countLeaves(item), 0) || 1 : 1;

/** A value's line, laid out before it is written: long texts get their room only once every line has its own. */
interface Leaf {
  kind: 'leaf';
  key: string;
  text: string;
  type: string;
  marked: boolean;
  /** Longer than this, it is folded. */
  inline: number;
  /** For a folded value: how many of its characters are shown when opened. */
  shown: number;
}
interface Branch {
  kind: 'branch';
  key: string;
  size: string;
  empty: string | null;
  marked: boolean;
  children: Node[];
}
type Node = Leaf | Branch;

interface Walk {
  left: number;
  /** Values not shown at all. */
  omitted: number;
  highlight: ReadonlySet<string>;
  /** Folded values, to be given their room after every line has its own. */
  folded: Leaf[];
}

/** Whether `path` is a marked value or on the way to one. */
const leadsToMark = (path: string, highlight: ReadonlySet<string>) =>
  highlight.has(path) || [...highlight].some((held) => held.startsWith(`${path}.`));

/** Entries with what the rule looked at first, the rest in their order. */
function ordered(value: Record<string, unknown> | unknown[], path: string | null, walk: Walk) {
  const entries = Object.entries(value);
  if (walk.highlight.size === 0) return entries;
  const pathOf = (key: string) => (path === null ? key : `${path}.${key}`);
  const first = entries.filter(([key]) => leadsToMark(pathOf(key), walk.highlight));
  return first.length === 0 ? entries : [...first, ...entries.filter((entry) => !first.includes(entry))];
}

function layOut(key: string, value: unknown, path: string, walk: Walk): Node | null {
  if (walk.left <= 0) {
    walk.omitted += countLeaves(value);
    return null;
  }
  walk.left -= key.length + NODE_COST;
  const marked = walk.highlight.has(path);
  if (!isTree(value)) {
    const text = jsonLine(value);
    const leaf: Leaf = {
      kind: 'leaf',
      key,
      text,
      type: value === null ? 'null' : typeof value,
      marked,
      inline: marked ? MARKED_INLINE_CHARS : INLINE_CHARS,
      shown: text.length,
    };
    walk.left -= Math.min(text.length, leaf.inline);
    if (text.length > leaf.inline) walk.folded.push(leaf);
    return leaf;
  }
  const entries = ordered(value, path, walk);
  const size = Array.isArray(value)
    ? `[${entries.length} item${entries.length === 1 ? '' : 's'}]`
    : `{${entries.length} field${entries.length === 1 ? '' : 's'}}`;
  return {
    kind: 'branch',
    key,
    size,
    empty: entries.length > 0 ? null : Array.isArray(value) ? '[]' : '{}',
    marked,
    children: layOutAll(entries, path, walk),
  };
}

const layOutAll = (entries: [string, unknown][], path: string | null, walk: Walk) =>
  entries
    .map(([key, value]) => layOut(key, value, path === null ? key : `${path}.${key}`, walk))
    .filter((node): node is Node => node !== null);

/** The room left, given to folded values: marked ones first, then in the page's order. Returns the characters cut. */
function giveRoom(walk: Walk): number {
  let left = Math.max(walk.left, 0);
  let cut = 0;
  const byMark = [
    ...walk.folded.filter((leaf) => leaf.marked),
    ...walk.folded.filter((leaf) => !leaf.marked),
  ];
  for (const leaf of byMark) {
    // Its beginning was counted with its line already.
    const more = leaf.text.length - leaf.inline;
    const given = Math.min(more, left);
    left -= given;
    leaf.shown = leaf.inline + given;
    cut += more - given;
  }
  return cut;
}

const count = (n: number, one: string) => `${n.toLocaleString('en')} ${one}${n === 1 ? '' : 's'}`;

/** Two or more blanks in a row (spaces, no-break and other wide spaces): shown as their count. */
const BLANKS = /\s{2,}/gu;

const blanksView = (run: string) =>
  html`<span class="blanks">${count(run.length, /^ +$/.test(run) ? 'space' : 'blank character')}</span>`;

/**
 * A value's text with each run of blanks written as its count, up to `visible` characters besides
 * those runs: a text padded with blanks still shows what follows them. Says whether it was cut.
 */
function textView(text: string, visible = Infinity): { view: Html[]; cut: boolean } {
  const view: Html[] = [];
  let left = visible;
  let at = 0;
  const plain = (end: number) => {
    const part = text.slice(at, Math.min(end, at + left));
    left -= part.length;
    if (part) view.push(html`${part}`);
    return at + part.length === end;
  };
  for (const run of text.matchAll(BLANKS)) {
    if (!plain(run.index) || left <= 0) return { view, cut: true };
    view.push(blanksView(run[0]));
    at = run.index + run[0].length;
  }
  return { view, cut: !plain(text.length) };
}

function leafView(leaf: Leaf): Html {
  const label = html`<span class="key">${nameText(leaf.key)}</span>:`;
  const mark = (inner: Html) => (leaf.marked ? html`<mark>${inner}</mark>` : inner);
  if (leaf.text.length <= leaf.inline)
    return html`<li class="${leaf.marked ? 'held' : null}">
      ${label} ${mark(html`<span class="value ${leaf.type}">${textView(leaf.text).view}</span>`)}
    </li>`;
  const missing = leaf.text.length - leaf.shown;
  const preview = textView(leaf.text, PREVIEW_CHARS);
  // Folded in place: the line says how long it is, and opening it shows it (no script needed). What
  // does not fit on the page is said on the line itself, visible while it is folded.
  return html`<li class="${leaf.marked ? 'held' : null}">
    <details class="long" ${leaf.marked ? html`open` : null}>
      <summary>
        ${label}
        ${mark(html`<span class="value ${leaf.type}">${preview.view}${preview.cut ? '…' : null}</span>`)}
        <span class="size">${count(leaf.text.length, 'character')}</span>
        ${missing > 0 ? html`<span class="cut">… ${count(missing, 'more character')} in the full JSON</span>` : null}
      </summary>
      <div class="value ${leaf.type} long-text">${leaf.text.slice(0, leaf.shown)}</div>
    </details>
  </li>`;
}

function nodeView(node: Node): Html {
  if (node.kind === 'leaf') return leafView(node);
  const label = html`<span class="key">${nameText(node.key)}</span>:`;
  if (node.empty !== null) return html`<li>${label} <span class="value">${node.empty}</span></li>`;
  return html`<li class="${node.marked ? 'held' : null}">
    <details open>
      <summary>
        ${label}
        ${node.marked ? html`<mark>${node.size}</mark>` : html`<span class="size">${node.size}</span>`}
      </summary>
      ${listView(node.children)}
    </details>
  </li>`;
}

const listView = (nodes: Node[]) =>
  html`<ul>
    ${nodes.map(nodeView)}
  </ul>`;

/** The arguments' view, and whether it shows every value in full. */
export function argumentsShown(
  args: Record<string, unknown>,
  options: ArgumentsOptions = {},
): ArgumentsShown {
  const walk: Walk = {
    left: options.budget ?? DEFAULT_ARGUMENTS_BUDGET,
    omitted: 0,
    highlight: new Set(options.highlight ?? []),
    folded: [],
  };
  const entries = ordered(args, null, walk);
  if (entries.length === 0) return { html: html`<p class="args muted">No arguments.</p>`, complete: true };
  const nodes = layOutAll(entries, null, walk);
  const cut = giveRoom(walk);
  const left = [walk.omitted > 0 && count(walk.omitted, 'value'), cut > 0 && count(cut, 'character')].filter(
    Boolean,
  );
  return {
    complete: left.length === 0,
    html: html`<div class="args">
      ${listView(nodes)}
      ${
        left.length > 0
          ? html`<p class="args-more" role="note">
              Too large to show whole: ${left.join(' and ')} left out here.
              ${options.fullJsonHref ? html`<a href="${options.fullJsonHref}" download>Download the full JSON</a>` : null}
            </p>`
          : null
      }
    </div>`,
  };
}

export const argumentsView = (args: Record<string, unknown>, options: ArgumentsOptions = {}): Html =>
  argumentsShown(args, options).html;
