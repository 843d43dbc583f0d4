"""ECDSA P-256 with SHA-256 signature verification (FIPS 186-4, SEC 1 4.1.4), in pure Python.

Verification only: there is no signing and no private key here. The arithmetic is plain Python
integers and is not constant-time, which is fine for what it is used for: checking a public
signature over public data with a public key. Do not reuse it for anything secret.
"""

from __future__ import annotations

import hashlib
from typing import Optional, Tuple

__all__ = ["verify"]

# The curve y^2 = x^3 - 3x + b over GF(p), its base point G and the order n of G (SEC 2, 2.4.2).
_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
_A = _P - 3
_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
_G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)
_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551

# Affine points; None is the point at infinity.
_Point = Optional[Tuple[int, int]]


def _on_curve(point: Tuple[int, int]) -> bool:
    x, y = point
    return 0 <= x < _P and 0 <= y < _P and (y * y - (x * x * x + _A * x + _B)) % _P == 0


def _add(a: _Point, b: _Point) -> _Point:
    if a is None:
        return b
    if b is None:
        return a
    (x1, y1), (x2, y2) = a, b
    if x1 == x2:
        if (y1 + y2) % _P == 0:
            return None
        slope = (3 * x1 * x1 + _A) * pow(2 * y1, _P - 2, _P) % _P
    else:
        slope = (y2 - y1) * pow(x2 - x1, _P - 2, _P) % _P
    x3 = (slope * slope - x1 - x2) % _P
    return (x3, (slope * (x1 - x3) - y1) % _P)


def _multiply(scalar: int, point: _Point) -> _Point:
    result: _Point = None
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def verify(public_point: bytes, message: bytes, r: int, s: int) -> bool:
    """Whether (r, s) is a P-256 ECDSA signature of SHA-256(message) under the uncompressed point
    (0x04 || X || Y, 65 bytes)."""
    if len(public_point) != 65 or public_point[0] != 4:
        return False
    q = (int.from_bytes(public_point[1:33], "big"), int.from_bytes(public_point[33:], "big"))
    if not _on_curve(q) or not (0 < r < _N and 0 < s < _N):
        return False
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    w = pow(s, _N - 2, _N)
    point = _add(_multiply(e * w % _N, _G), _multiply(r * w % _N, q))
    return point is not None and point[0] % _N == r
