"""The offline evidence check on an export the real service made, signed with its Ed25519 key:
the same verdicts as the TypeScript SDK, and every kind of tampering found."""

from __future__ import annotations

import base64
import io
import json
import pathlib
import unittest
from typing import Any, Callable, Dict, List

import _support
from approvals import ApprovalsError, verify_evidence_export
from approvals.evidence import checkpoint_input, entry_hash_input


@_support.needs_service
class RealExport(unittest.TestCase):
    def setUp(self) -> None:
        with open(_support.path("evidence.jsonl"), encoding="utf-8") as file:
            self.text = file.read()
        self.lines = self.text.rstrip("\n").split("\n")
        self.header = json.loads(self.lines[0])
        self.published = _support.read_json("audit-key.json")
        with open(_support.path("audit-key.pem"), encoding="utf-8") as file:
            self.pem = file.read()
        self.expected = _support.read_json("evidence-expected.json")

    def rewrite(self, edit: Callable[[List[str]], List[str]]) -> str:
        return "\n".join(edit(list(self.lines))) + "\n"

    def entry(self, seq: int) -> Dict[str, Any]:
        return json.loads(self.lines[seq])

    def test_intact_with_the_published_keys_as_the_typescript_sdk_says(self) -> None:
        result = verify_evidence_export(self.text, keys=self.published)
        self.assertEqual(
            (result.valid, result.checked, result.head, result.first_invalid, result.signature),
            (True, self.expected["checked"], self.expected["head"], None, "valid"),
        )
        self.assertEqual(result.org_id, self.expected["orgId"])
        self.assertEqual(result.checkpoint, self.expected["checkpoint"])
        self.assertEqual(result.checked, len(self.lines) - 1)

    def test_every_way_of_giving_the_key_and_the_export(self) -> None:
        raw_key = base64.urlsafe_b64decode(self.published["jwk"]["x"] + "==")
        for keys in (self.published, json.dumps(self.published), self.pem, [self.pem], raw_key, self.published["keys"]):
            with self.subTest(keys=type(keys).__name__):
                self.assertEqual(verify_evidence_export(self.text, keys=keys).signature, "valid")
        path = pathlib.Path(_support.path("evidence.jsonl"))
        self.assertTrue(verify_evidence_export(path, keys=self.pem).valid)
        with open(path, "rb") as file:
            self.assertTrue(verify_evidence_export(file, keys=self.pem).valid)
        with open(path, encoding="utf-8") as file:
            self.assertTrue(verify_evidence_export(file, keys=self.pem).valid)
        self.assertTrue(verify_evidence_export(self.text.encode("utf-8"), keys=self.pem).valid)
        # Chunks that split lines anywhere.
        chunks = [self.text[i : i + 37] for i in range(0, len(self.text), 37)]
        self.assertTrue(verify_evidence_export(iter(chunks), keys=self.pem).valid)

    def test_the_hashes_and_the_signature_are_recomputed_here(self) -> None:
        import hashlib

        from approvals import ed25519

        for line in self.lines[1:]:
            entry = json.loads(line)
            self.assertEqual(hashlib.sha256(entry_hash_input(entry).encode("utf-8")).hexdigest(), entry["hash"])
        checkpoint = self.header["checkpoint"]
        signed = checkpoint_input(self.header["orgId"], checkpoint).encode("utf-8")
        key = base64.urlsafe_b64decode(self.published["jwk"]["x"] + "==")
        signature = base64.b64decode(checkpoint["signature"])
        self.assertTrue(ed25519.verify(key, signed, signature), "a signature the service made")
        self.assertFalse(ed25519.verify(key, signed.replace(b'"seq":', b'"seq":1'), signature))

    def test_without_keys_the_chain_is_checked_and_the_signature_is_not(self) -> None:
        result = verify_evidence_export(self.text)
        self.assertEqual((result.valid, result.signature), (True, "unchecked"))

    def test_a_changed_removed_or_cut_off_entry_is_found(self) -> None:
        def changed(lines: List[str]) -> List[str]:
            entry = self.entry(2)
            entry["data"] = dict(entry["data"], name="Evil")
            lines[2] = json.dumps(entry)
            return lines

        self.assertEqual(verify_evidence_export(self.rewrite(changed), keys=self.pem).first_invalid, {"seq": 2, "reason": "hash_mismatch"})
        removed = self.rewrite(lambda lines: lines[:3] + lines[4:])
        self.assertEqual(verify_evidence_export(removed, keys=self.pem).first_invalid, {"seq": 3, "reason": "sequence_gap"})
        cut = self.rewrite(lambda lines: lines[:-2])
        self.assertEqual(
            verify_evidence_export(cut, keys=self.pem).first_invalid, {"seq": len(self.lines) - 2, "reason": "truncated"}
        )

        def relinked(lines: List[str]) -> List[str]:
            entry = self.entry(3)
            entry["prev_hash"] = "f" * 64
            lines[3] = json.dumps(entry)
            return lines

        self.assertEqual(verify_evidence_export(self.rewrite(relinked)).first_invalid, {"seq": 3, "reason": "broken_link"})

    def test_a_forged_or_missing_checkpoint_is_found(self) -> None:
        def header(checkpoint: Any) -> str:
            return self.rewrite(lambda lines: [json.dumps(dict(self.header, checkpoint=checkpoint))] + lines[1:])

        forged = verify_evidence_export(header(dict(self.header["checkpoint"], signed_at="2020-01-01T00:00:00.000Z")), keys=self.pem)
        self.assertEqual(
            (forged.valid, forged.checked, forged.first_invalid, forged.signature),
            (False, len(self.lines) - 1, {"seq": self.header["checkpoint"]["seq"], "reason": "checkpoint_invalid"}, "invalid"),
        )
        unsigned = verify_evidence_export(header(None), keys=self.pem)
        self.assertEqual((unsigned.signature, unsigned.first_invalid), ("invalid", {"seq": 1, "reason": "checkpoint_missing"}))
        # A key that is not the service's.
        other_key = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        self.assertEqual(verify_evidence_export(self.text, keys=other_key).signature, "invalid")
        # A published key whose id is not the checkpoint's is not tried.
        renamed = {"keys": [dict(self.published["keys"][-1], key_id="someone-else")]}
        self.assertEqual(verify_evidence_export(self.text, keys=renamed).signature, "invalid")

    def test_an_earlier_checkpoint_must_still_be_held(self) -> None:
        kept = self.header["checkpoint"]
        self.assertTrue(verify_evidence_export(self.text, keys=self.pem, checkpoint=kept).valid)
        rewritten = verify_evidence_export(self.text, keys=None, checkpoint=dict(kept, hash="0" * 64))
        self.assertEqual(rewritten.first_invalid, {"seq": kept["seq"], "reason": "rewritten"})
        with self.assertRaisesRegex(ApprovalsError, "not signed by any of the keys"):
            verify_evidence_export(self.text, keys=self.pem, checkpoint=dict(kept, hash="0" * 64))
        # A checkpoint kept from past the export's end: the export was cut off since.
        cut = verify_evidence_export(self.text, checkpoint=dict(kept, seq=kept["seq"] + 1))
        self.assertFalse(cut.valid)
        self.assertEqual(cut.first_invalid, {"seq": kept["seq"] + 1, "reason": "truncated"})

    def test_what_is_not_an_export_raises(self) -> None:
        with self.assertRaisesRegex(ApprovalsError, "line 1 is not a approvals-evidence/1 header"):
            verify_evidence_export('{"hello":1}\n')
        with self.assertRaisesRegex(ApprovalsError, "line 2 is not JSON"):
            verify_evidence_export(self.lines[0] + "\nnot json\n")
        with self.assertRaisesRegex(ApprovalsError, "line 2 is not an entry"):
            verify_evidence_export(self.lines[0] + '\n{"seq":1}\n')
        with self.assertRaisesRegex(ApprovalsError, "neither a published key nor a PEM"):
            verify_evidence_export(self.text, keys="not a key")
        with self.assertRaisesRegex(ApprovalsError, "not an Ed25519 public key"):
            verify_evidence_export(self.text, keys={"key_id": "x", "jwk": {"kty": "RSA", "n": "x"}})


class EmptyChain(unittest.TestCase):
    def test_an_export_without_entries(self) -> None:
        text = io.StringIO('{"format":"approvals-evidence/1","orgId":"o","exported_at":"x","checkpoint":null}\n')
        result = verify_evidence_export(text)
        self.assertEqual((result.valid, result.checked, result.head), (True, 0, None))


if __name__ == "__main__":
    unittest.main()
