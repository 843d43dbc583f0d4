/**
 * The arguments' view (issue 37): every value keeps its line, long texts fold in place with their
 * length, what the rule looked at comes first, and `complete` says whether a page may offer Approve.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argumentsShown } from './arguments.ts';

const IBAN = 'DE89370400440532013000';

test('a long memo before the payee: folded with its length, every value whole, the marked one first', () => {
  const args = { memo: 'm'.repeat(30_000), amount: 250_000, payee: { name: 'Ann', iban: IBAN } };
  const { html, complete } = argumentsShown(args, { highlight: ['payee.iban', 'amount'] });
  const out = html.toString();
  assert.equal(complete, true);
  assert.ok(out.includes(`&quot;${'m'.repeat(30_000)}&quot;`), 'the memo whole, inside its fold');
  assert.match(
    out,
    /<details class="long" >\s*<summary>\s*<span class="key">memo<\/span>[^]*?30,002 characters/,
  );
  assert.doesNotMatch(out, /left out/);
  // What the rule looked at comes first, in the order of the arguments: amount, payee (iban first), memo.
  const at = (text: string) => out.indexOf(text);
  assert.ok(at('>amount<') < at('>payee<') && at('>payee<') < at('>memo<'));
  assert.ok(at('>iban<') < at('>name<'));
  assert.match(out, /<mark><span class="value string">&quot;DE89370400440532013000&quot;<\/span><\/mark>/);
});

test('past the budget: every short value still has its line, the long text is cut, not complete', () => {
  const args = { memo: 'm'.repeat(200_000), amount: 250_000, iban: IBAN };
  const { html, complete } = argumentsShown(args, { fullJsonHref: '/x.json' });
  const out = html.toString();
  assert.equal(complete, false);
  assert.ok(out.includes(IBAN));
  assert.ok(out.includes('250000'));
  assert.match(out, /200,002 characters/);
  assert.match(out, /more characters in the full JSON/);
  assert.match(out, /Download the full JSON/);
  assert.ok(out.length < 70_000, `${out.length} characters`);
});

test('a marked long value gets its room first and is open', () => {
  const args = { a: 'a'.repeat(40_000), b: 'b'.repeat(40_000) };
  const out = argumentsShown(args, { highlight: ['b'] }).html.toString();
  assert.ok(out.includes('b'.repeat(40_000)), 'the marked value whole');
  assert.ok(!out.includes('a'.repeat(40_000)), 'the other one cut');
  assert.match(out, /<details class="long" open>\s*<summary>\s*<span class="key">b<\/span>/);
});

test('too many values for a page: some are left out, counted, not complete', () => {
  const wide = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`f${i}`, i]));
  const { html, complete } = argumentsShown(wide);
  assert.equal(complete, false);
  assert.match(html.toString(), /\d,\d{3} values left out here/);
  assert.equal(argumentsShown({}).complete, true);
  assert.equal(argumentsShown({ a: 1, b: 'short' }).complete, true);
});

/** The `<details>` tags of a view that are not open by default, but for folded long texts. */
const closedBranches = (out: string) =>
  [...out.matchAll(/<details([^>]*)>/g)]
    .map((tag) => tag[1]!)
    .filter((attrs) => !/\bopen\b|class="long"/.test(attrs));

test('deeply nested values: every level is open, so no value waits behind a closed fold', () => {
  const args = { invoice: { lines: { payment: { beneficiary: { iban: IBAN, amount: 250_000 } } } } };
  const { html, complete } = argumentsShown(args);
  const out = html.toString();
  assert.equal(complete, true);
  assert.deepEqual(closedBranches(out), []);
  assert.ok(out.includes(IBAN) && out.includes('250000'));
  // Deeper still, and in arrays.
  const deeper = argumentsShown({ a: [{ b: { c: [{ d: { e: { iban: IBAN } } }] } }] }).html.toString();
  assert.deepEqual(closedBranches(deeper), []);
});

test('a long text padded with blanks: its folded line shows what follows them, and how many there were', () => {
  const out = argumentsShown({ iban: `${' '.repeat(190)}${IBAN}` }).html.toString();
  const summary = out.slice(out.indexOf('<summary>'), out.indexOf('</summary>'));
  assert.match(summary, /190 spaces/);
  assert.ok(summary.includes(IBAN), 'the IBAN on the folded line');
  assert.match(summary, /214 characters/);
  // Blanks inside a short value are counted too, and a long one's visible beginning is 80 characters.
  const short = argumentsShown({ payee: `Ann${' '.repeat(40)}DE89` }).html.toString();
  assert.match(short, /&quot;Ann<span class="blanks">40 spaces<\/span>DE89&quot;/);
  const wide = argumentsShown({ memo: `${'\u00a0'.repeat(50)}${'x'.repeat(300)}` }).html.toString();
  assert.match(wide, /<span class="blanks">50 blank characters<\/span>x{79}…/);
});

test('a value the rule looked at is not folded at a few hundred characters', () => {
  const address = `Acme Ltd, ${'Long Street 1, '.repeat(30)}London`;
  const out = argumentsShown({ memo: address, payee: address }, { highlight: ['payee'] }).html.toString();
  const payee = out.slice(out.indexOf('>payee<'), out.indexOf('</li>', out.indexOf('>payee<')));
  assert.doesNotMatch(payee, /class="size"|<\/summary>/, 'the marked one on its line, whole, not folded');
  assert.match(out.slice(out.indexOf('>memo<')), /characters<\/span>/, 'the other one folded');
});
