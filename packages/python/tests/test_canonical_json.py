"""Canonical JSON (RFC 8785) byte for byte as the TypeScript SDK and the service write it."""

from __future__ import annotations

import json
import unittest

import _support
from approvals import canonical_json


class CanonicalJson(unittest.TestCase):
    def test_layout_key_order_and_literals(self) -> None:
        self.assertEqual(canonical_json({"b": 1, "a": [True, False, None], "c": {}}), '{"a":[true,false,null],"b":1,"c":{}}')
        self.assertEqual(canonical_json([]), "[]")
        self.assertEqual(canonical_json((1, "x")), '[1,"x"]')

    def test_numbers_as_ecmascript_writes_them(self) -> None:
        cases = {
            0.0: "0",
            -0.0: "0",
            1.0: "1",
            100.0: "100",
            0.1 + 0.2: "0.30000000000000004",
            1e21: "1e+21",
            1e20: "100000000000000000000",
            1e-7: "1e-7",
            1.5e-7: "1.5e-7",
            0.000001: "0.000001",
            5e-324: "5e-324",
            -1234.5678: "-1234.5678",
            2**53: "9007199254740992",
            # Beyond 2^53 an integer is a double in JavaScript, so it is written as one.
            2**53 + 1: "9007199254740992",
            12345678901234567890: "12345678901234567000",
            10**25: "1e+25",
        }
        for number, expected in cases.items():
            with self.subTest(number=number):
                self.assertEqual(canonical_json(number), expected)

    def test_strings_as_ecmascript_writes_them(self) -> None:
        self.assertEqual(canonical_json('a"b\\c/d'), '"a\\"b\\\\c/d"')
        self.assertEqual(canonical_json("\b\f\n\r\t\u0000\u0007\u001f\u007f"), '"\\b\\f\\n\\r\\t\\u0000\\u0007\\u001f\u007f"')
        self.assertEqual(canonical_json("Zoë ✓ 😀 \u2028"), '"Zoë ✓ 😀 \u2028"')
        self.assertEqual(canonical_json("\ud800"), '"\\ud800"')

    def test_keys_sort_by_utf16_code_units(self) -> None:
        # U+1F600 is D83D DE00 in UTF-16, below U+FFFF; by code point it would come after.
        self.assertEqual(canonical_json({"\uffff": 1, "😀": 2, "é": 3, "E": 4, "e": 5}), '{"E":4,"e":5,"é":3,"😀":2,"\uffff":1}')

    def test_what_json_cannot_hold_is_refused(self) -> None:
        for value in (float("nan"), float("inf"), 10**400, {1: "x"}, object(), {"a": {1, 2}}):
            with self.subTest(value=type(value).__name__):
                with self.assertRaises((TypeError, ValueError)):
                    canonical_json(value)

    @_support.needs_service
    def test_the_same_text_as_the_typescript_sdk(self) -> None:
        cases = _support.read_json("canonical.json")
        self.assertGreater(len(cases), 5)
        for case in cases:
            with self.subTest(input=case["input"][:40]):
                self.assertEqual(canonical_json(json.loads(case["input"])), case["canonical"])


if __name__ == "__main__":
    unittest.main()
