import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonLine, summarizeAction, summarizeArguments } from './summary.ts';

test('an action that fits is shown whole and complete', () => {
  const summary = summarizeAction('send_invoice', { customer: 'Globex', amount: 1200 }, 200);
  assert.deepEqual(summary, { text: 'send_invoice(customer="Globex", amount=1200)', complete: true });
});

test('a memo of spaces cannot push the amount and the payee out of sight', () => {
  const args = { memo: ' '.repeat(300), amount: 950000, payee: 'Mallory Ltd' };
  const summary = summarizeAction('pay', args, 200);
  assert.equal(summary.complete, false);
  assert.ok(summary.text.length <= 200);
  assert.match(summary.text, /^pay\(memo=" {33}…, amount=950000, payee="Mallory Ltd"\)$/);
});

test('a summary that does not fit says how many fields it left out, within its budget', () => {
  const args = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`field${i}`, 'x'.repeat(i)]));
  for (const budget of [60, 100, 300, 500]) {
    const { text, complete } = summarizeAction('tool', args, budget);
    assert.equal(complete, false);
    assert.ok(text.length <= budget, `${text.length} > ${budget}`);
    const left = Number(/\+(\d+) more fields?\)$/.exec(text)?.[1]);
    const shown = (text.match(/field\d+=/g) ?? []).length;
    assert.equal(shown + left, 50, `every field shown or counted: ${text}`);
  }
  assert.match(summarizeAction('t', { a: 'x'.repeat(100), b: 1 }, 80).text, /^t\(a="x+…, b=1\)$/);
});

test('line breaks, controls and bidi or zero-width characters are shown escaped, as valid JSON', () => {
  const value = 'a\nb\u2028c\u2029d\u0085e\u202ef\u200bg\u{e0041}h';
  const line = jsonLine(value);
  assert.equal(line, '"a\\nb\\u2028c\\u2029d\\u0085e\\u202ef\\u200bg\\udb40\\udc41h"');
  assert.equal(JSON.parse(line), value);
  const { text } = summarizeAction('t', { [`k\ney`]: value, plain_key: 1 }, Infinity);
  assert.equal(text, `t("k\\ney"=${line}, plain_key=1)`);
});

test('the arguments alone are summarized as inside an action, within their budget', () => {
  assert.deepEqual(summarizeArguments({ amount: 4200, currency: 'EUR' }, 100), {
    text: 'amount=4200, currency="EUR"',
    complete: true,
  });
  const long = summarizeArguments({ amount: 321, blob: 'x'.repeat(1_000_000), to: 'acme' }, 100);
  assert.equal(long.complete, false);
  assert.ok(long.text.length <= 100, long.text);
  assert.match(long.text, /^amount=321, blob="x+…, to="acme"$/);
  assert.equal(summarizeArguments({}, 10).text, '');
});
