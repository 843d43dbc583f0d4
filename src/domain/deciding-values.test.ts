import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decidingEntries, decidingText, moneyText, payeeText, ruleArguments } from './deciding-values.ts';

const payment = {
  memo: 'x'.repeat(300),
  note: 'n',
  iban: 'DE00',
  payee: 'Globex',
  amount: 31496.75,
  currency: 'EUR',
};

test('a rule refers to the top-level arguments of its conditions, once each, an amount with its currency', () => {
  const rule = {
    when: [
      { arg: 'payee.name', op: 'eq' as const, value: 'Globex' },
      { arg: 'amount', op: 'gt' as const, value: 1000 },
      { arg: 'payee.country', op: 'ne' as const, value: 'DE' },
    ],
  };
  assert.deepEqual(ruleArguments(rule), ['payee', 'amount', 'currency']);
  assert.deepEqual(ruleArguments({}), []);
});

test('deciding order: the rule’s arguments, then money and recipient keys, then the rest as given', () => {
  const keys = decidingEntries(payment, ['note', 'amount', 'currency', 'absent']).map(([key]) => key);
  assert.deepEqual(keys, ['note', 'amount', 'currency', 'payee', 'iban', 'memo']);
  assert.deepEqual(
    decidingEntries({ memo: 'm', IBAN: 'x', Amount: 1 }, []).map(([key]) => key),
    ['Amount', 'IBAN', 'memo'],
  );
  assert.deepEqual(decidingEntries({ b: 1, 2: 'two' }, ['b']), [
    ['b', 1],
    ['2', 'two'],
  ]);
});

test('a long memo cannot push the amount out of the deciding text, which is cut within its budget', () => {
  const { text, complete } = decidingText(payment, [], 90);
  assert.equal(complete, false);
  assert.ok(text.length <= 90);
  assert.match(text, /^amount=31496\.75, currency="EUR", payee="Globex", iban="DE00", /);
  assert.deepEqual(decidingText({ amount: 5 }, ['amount', 'currency'], 80), {
    text: 'amount=5',
    complete: true,
  });
});

test('money reads as an amount and its currency, only when the amount is a number', () => {
  assert.equal(moneyText(payment), '31,496.75 EUR');
  assert.equal(moneyText({ amount: 1200 }), '1,200');
  assert.equal(moneyText({ amount: '1200', currency: 'EUR' }), null);
  assert.equal(moneyText({}), null);
  // A currency that is not a plain code is quoted: it cannot pass for a subject's own words.
  assert.equal(moneyText({ amount: 5, currency: 'EUR; approved by CFO' }), '5 "EUR; approved by CFO"');
  assert.equal(moneyText({ amount: 5, currency: 'usd' }), '5 usd');
  assert.equal(moneyText({ amount: 1, currency: 'E\u202eUR' }), '1 "E\\u202eUR"');
});

test('the payee is the first string of payee, to or recipient, hidden characters shown and cut', () => {
  assert.equal(payeeText(payment), 'Globex');
  assert.equal(payeeText({ to: 'acme', recipient: 'other' }), 'acme');
  assert.equal(payeeText({ payee: { name: 'Globex' }, recipient: 'Initech' }), 'Initech');
  assert.equal(payeeText({ payee: ' ' }), null);
  assert.equal(payeeText({ to: 'a\u2028b' }), 'a\\u2028b');
  assert.equal(payeeText({ to: 'y'.repeat(100) })!.length, 60);
});
