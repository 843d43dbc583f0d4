"""Ed25519 verification against the test vectors of RFC 8032 (section 7.1) and broken variants.
Signatures the service made are checked in test_evidence.py."""

from __future__ import annotations

import unittest

import _support  # noqa: F401  (puts the package on the path)
from approvals import ed25519

# RFC 8032, 7.1: TEST 1, TEST 2, TEST 3 (public key, message, signature).
VECTORS = [
    (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
        "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
        "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
]
L = 2**252 + 27742317777372353535851937790883648493


def flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


class RfcVectors(unittest.TestCase):
    def test_the_rfc_signatures_verify(self) -> None:
        for key, message, signature in VECTORS:
            with self.subTest(key=key[:8]):
                self.assertTrue(ed25519.verify(bytes.fromhex(key), bytes.fromhex(message), bytes.fromhex(signature)))

    def test_a_changed_message_key_or_signature_does_not(self) -> None:
        for key_hex, message_hex, signature_hex in VECTORS:
            key, message, signature = (bytes.fromhex(key_hex), bytes.fromhex(message_hex), bytes.fromhex(signature_hex))
            with self.subTest(key=key_hex[:8]):
                self.assertFalse(ed25519.verify(key, message + b"x", signature))
                self.assertFalse(ed25519.verify(flip(key, 3), message, signature))
                self.assertFalse(ed25519.verify(key, message, flip(signature, 5)))  # in R
                self.assertFalse(ed25519.verify(key, message, flip(signature, 40)))  # in S
        # One vector's signature under another's key.
        self.assertFalse(ed25519.verify(bytes.fromhex(VECTORS[1][0]), bytes.fromhex(VECTORS[2][1]), bytes.fromhex(VECTORS[2][2])))

    def test_s_at_or_above_the_group_order_is_refused(self) -> None:
        key, message, signature = (bytes.fromhex(part) for part in VECTORS[0])
        s = int.from_bytes(signature[32:], "little")
        malleated = signature[:32] + (s + L).to_bytes(32, "little")
        self.assertFalse(ed25519.verify(key, message, malleated))

    def test_malformed_input_is_invalid_not_an_exception(self) -> None:
        key, message, signature = (bytes.fromhex(part) for part in VECTORS[1])
        self.assertFalse(ed25519.verify(key[:31], message, signature))
        self.assertFalse(ed25519.verify(key, message, signature[:63]))
        self.assertFalse(ed25519.verify(key, message, signature + b"\x00"))
        self.assertFalse(ed25519.verify(b"\xff" * 32, message, signature))  # y is not below p
        self.assertFalse(ed25519.verify("not bytes", message, signature))  # type: ignore[arg-type]
        # Many points that are not on the curve, or are: never an exception.
        for start in range(0, 64):
            self.assertFalse(ed25519.verify(bytes(range(start, start + 32)), message, signature))


if __name__ == "__main__":
    unittest.main()
