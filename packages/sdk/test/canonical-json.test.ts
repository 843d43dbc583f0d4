import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalJson } from '../src/canonical-json.ts';

test('sorts keys by UTF-16 code units and drops whitespace (RFC 8785 3.2.3 example)', () => {
  const input = {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  };
  assert.equal(
    canonicalJson(input),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis",' +
      '"€":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
});

test('serializes numbers as ECMAScript does (RFC 8785 appendix B)', () => {
  assert.equal(
    canonicalJson([1e21, 1e-7, -0, Number('333333333.33333329'), 4.5, 0.002, 1e30]),
    '[1e+21,1e-7,0,333333333.3333333,4.5,0.002,1e+30]',
  );
  assert.throws(() => canonicalJson(Number.NaN));
});

test('nested structures, escapes and undefined members', () => {
  assert.equal(
    canonicalJson({ b: [true, null, 'a"b\n'], a: { d: 1, c: undefined } }),
    '{"a":{"d":1},"b":[true,null,"a\\"b\\n"]}',
  );
});
