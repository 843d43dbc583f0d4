"""Ed25519 signature verification (RFC 8032, section 5.1.7), in pure Python.

Verification only: there is no signing and no private key here. The arithmetic is plain Python
integers and is not constant-time, which is fine for what it is used for: checking a public
signature over public data with a public key. Do not reuse it for anything secret.
"""

from __future__ import annotations

import hashlib
from typing import Optional, Tuple

__all__ = ["verify"]

# The field GF(p), p = 2^255 - 19, and the curve -x^2 + y^2 = 1 + d x^2 y^2 (RFC 8032, 5.1).
_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
# The order of the base point's subgroup.
_L = 2**252 + 27742317777372353535851937790883648493
# A square root of -1 modulo p.
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

# Points in extended homogeneous coordinates (X, Y, Z, T) with x = X/Z, y = Y/Z, x*y = T/Z.
_Point = Tuple[int, int, int, int]
_IDENTITY: _Point = (0, 1, 1, 0)


def _add(a: _Point, b: _Point) -> _Point:
    """Point addition, the complete formulas of RFC 8032, 5.1.4 (valid for doubling too)."""
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa = (y1 - x1) * (y2 - x2) % _P
    bb = (y1 + x1) * (y2 + x2) % _P
    cc = t1 * 2 * _D * t2 % _P
    dd = z1 * 2 * z2 % _P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _multiply(scalar: int, point: _Point) -> _Point:
    """scalar * point, by double-and-add (not constant-time; public inputs only)."""
    result = _IDENTITY
    while scalar > 0:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _recover_x(y: int, sign: int) -> Optional[int]:
    """The x of the point with this y and x's low bit `sign`, or None (RFC 8032, 5.1.3)."""
    if y >= _P:
        return None
    u = (y * y - 1) % _P
    v = (_D * y * y + 1) % _P
    # x = (u/v)^((p+3)/8), computed as u v^3 (u v^7)^((p-5)/8).
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    vx2 = v * x * x % _P
    if vx2 == u:
        pass
    elif vx2 == (-u) % _P:
        x = x * _SQRT_M1 % _P
    else:
        return None
    if x == 0 and sign == 1:
        return None
    if x & 1 != sign:
        x = _P - x
    return x


def _decode_point(encoded: bytes) -> Optional[_Point]:
    """A 32-byte point encoding (little-endian y, x's low bit in the top bit), or None."""
    if len(encoded) != 32:
        return None
    number = int.from_bytes(encoded, "little")
    y = number & ((1 << 255) - 1)
    x = _recover_x(y, number >> 255)
    if x is None:
        return None
    return (x, y, 1, x * y % _P)


def _encode_point(point: _Point) -> bytes:
    x, y, z, _ = point
    z_inverse = pow(z, _P - 2, _P)
    x, y = x * z_inverse % _P, y * z_inverse % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _base_point() -> _Point:
    """B: the point with y = 4/5 and an even x (RFC 8032, 5.1)."""
    y = 4 * pow(5, _P - 2, _P) % _P
    x = _recover_x(y, 0)
    assert x is not None
    return (x, y, 1, x * y % _P)


_BASE = _base_point()


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` (64 bytes) is a valid Ed25519 signature of `message` by `public_key`
    (32 bytes). Malformed keys or signatures are simply invalid: this never raises for bad input.

    The check is the one of RFC 8032, 5.1.7 without the cofactor, as OpenSSL and WebCrypto do it:
    S must be below L, and encode([S]B - [k]A) must equal R byte for byte, with
    k = SHA-512(R || A || message) mod L.
    """
    if not isinstance(public_key, (bytes, bytearray)) or not isinstance(signature, (bytes, bytearray)):
        return False
    if len(public_key) != 32 or len(signature) != 64:
        return False
    point_a = _decode_point(bytes(public_key))
    if point_a is None:
        return False
    r_bytes, s_bytes = bytes(signature[:32]), bytes(signature[32:])
    s = int.from_bytes(s_bytes, "little")
    if s >= _L:
        return False
    k = int.from_bytes(hashlib.sha512(r_bytes + bytes(public_key) + bytes(message)).digest(), "little") % _L
    # [S]B - [k]A: negating a point negates its x (and T).
    x, y, z, t = _multiply(k, point_a)
    check = _add(_multiply(s, _BASE), ((-x) % _P, y, z, (-t) % _P))
    return _encode_point(check) == r_bytes
