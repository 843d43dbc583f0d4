"""RFC 8785 canonical JSON, byte for byte as the service (and the TypeScript SDK) writes it.

Object keys sorted by UTF-16 code units, no whitespace, strings and numbers written as ECMAScript's
``JSON.stringify`` writes them. Evidence hashes and checkpoint signatures cover this form.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["canonical_json"]

# Code points JSON.stringify escapes beyond what json.dumps(ensure_ascii=False) does: lone
# surrogates (a Python str from json.loads holds a pair as one code point, so any left is lone).
_SURROGATE = re.compile("[\ud800-\udfff]")
# Integers beyond this are not exact in an IEEE double, which is what the service computes with.
_MAX_SAFE_INTEGER = 2**53 - 1


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value` (dict, list, str, int, float, bool or None).

    Raises TypeError for anything else (and for NaN or infinity), ValueError for a key that is
    not a string.
    """
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise ValueError("canonical JSON: object keys must be strings")
        keys = sorted(value, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(_string(key) + ":" + canonical_json(value[key]) for key in keys) + "}"
    raise TypeError("canonical JSON cannot represent a " + type(value).__name__)


def _string(text: str) -> str:
    written = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda match: "\\u%04x" % ord(match.group()), written)


def _number(number: float) -> str:
    """ECMAScript's Number::toString: the shortest digits that round-trip, placed as JS places them."""
    if isinstance(number, int) and abs(number) <= _MAX_SAFE_INTEGER:
        return str(number)
    try:
        as_double = float(number)
    except OverflowError:
        raise TypeError("canonical JSON cannot represent a non-finite number") from None
    if not math.isfinite(as_double):
        raise TypeError("canonical JSON cannot represent a non-finite number")
    if as_double == 0:
        return "0"  # -0 too
    sign = "-" if as_double < 0 else ""
    # repr gives the shortest round-tripping digits, as ECMAScript requires; only the layout differs.
    mantissa, _, exponent = repr(abs(as_double)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    # value = 0.<digits> * 10^n
    n = len(whole) + int(exponent or 0)
    significant = digits.lstrip("0")
    n -= len(digits) - len(significant)
    digits = significant.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        power = n - 1
        fraction = "." + digits[1:] if k > 1 else ""
        text = digits[0] + fraction + "e" + ("+" if power >= 0 else "-") + str(abs(power))
    return sign + text
