"""verify_receipt against the service's own receipts and published keys, tried as a payment API's
attacker would: other arguments, another workspace, later, a changed payload, a key of their own."""

from __future__ import annotations

import base64
import json
import os
import unittest
import urllib.request
import uuid
from typing import Any, Dict

import _support
from approvals import Client, receipt_action_hash, verify_receipt

WORKSPACE = os.environ.get("APPROVALS_WORKSPACE", "")
BALANCE = {"account": "A-1"}


def b64(data: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode("utf-8")).decode("ascii").rstrip("=")


def decoded(part: str) -> Dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def payload(receipt: str) -> Dict[str, Any]:
    return decoded(receipt.split(".")[1])


class Offline(unittest.TestCase):
    def test_the_action_hash_is_of_the_canonical_action(self) -> None:
        self.assertEqual(
            receipt_action_hash("send_invoice", {"b": 1, "a": [1, 2]}),
            receipt_action_hash("send_invoice", {"a": [1, 2], "b": 1}),
        )
        self.assertNotEqual(receipt_action_hash("pay", {"amount": 1}), receipt_action_hash("pay", {"amount": 2}))
        self.assertNotEqual(receipt_action_hash("pay"), receipt_action_hash("pay", connection="Payments"))

    def test_garbage_is_malformed(self) -> None:
        for garbage in ["", "a.b", "a.b.c", "...", None, "a.b.c.d", "e30.e30.!!"]:
            self.assertEqual(verify_receipt(garbage, "pay", jwks={"keys": []}, workspace="w").reason, "malformed")  # type: ignore[arg-type]


@_support.needs_service
class AgainstTheService(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(_support.URL, _support.KEY, agent_identity={"id": "billing-bot"})
        with urllib.request.urlopen(_support.URL + "/.well-known/approvals-receipt-keys", timeout=10) as answer:
            self.jwks = json.load(answer)

    def check(self, receipt: str, arguments: Any = BALANCE, tool_name: str = "read_balance", **options: Any):
        return verify_receipt(receipt, tool_name, arguments, **{"jwks": self.jwks, "workspace": WORKSPACE, **options})

    def test_an_allowed_hold_carries_a_receipt_that_checks(self) -> None:
        decision = self.client.hold(tool_name="read_balance", arguments=BALANCE)
        self.assertIsNotNone(decision.receipt)
        checked = self.check(decision.receipt)
        self.assertTrue(checked.valid, checked.reason)
        self.assertEqual(checked.claims["sub"], decision.reference)
        self.assertEqual((checked.claims["decision"], checked.claims["approvers"]), ("allowed", []))
        self.assertEqual(self.client.get_hold(decision.reference).receipt, decision.receipt)

    def test_an_approved_hold_names_its_approver(self) -> None:
        idempotency_key = "py-" + uuid.uuid4().hex
        decider = _support.Decider(idempotency_key, "approve")
        arguments = {"customer": "C-7", "amount": 70, "currency": "EUR"}
        decision = self.client.hold(
            tool_name="send_invoice", arguments=arguments, idempotency_key=idempotency_key, timeout=60
        )
        decider.join()
        checked = self.check(decision.receipt, arguments, "send_invoice")
        self.assertTrue(checked.valid, checked.reason)
        self.assertEqual((checked.claims["decision"], checked.claims["approvers"]), ("approved", ["admin@acme.test"]))

    def test_a_pending_or_denied_hold_has_none(self) -> None:
        self.assertIsNone(self.client.hold(tool_name="send_invoice", wait=False).receipt)
        self.assertIsNone(self.client.hold(tool_name="delete_account", arguments={"account": "A-1"}).receipt)

    def test_it_does_not_pass_for_another_action_workspace_or_time_or_forged(self) -> None:
        receipt = self.client.hold(tool_name="read_balance", arguments=BALANCE).receipt
        self.assertEqual(self.check(receipt, {"account": "A-2"}).reason, "action_mismatch")
        self.assertEqual(self.check(receipt, BALANCE, "send_invoice").reason, "action_mismatch")
        self.assertEqual(self.check(receipt, connection="Payments").reason, "action_mismatch")
        self.assertEqual(self.check(receipt, workspace="someone-else").reason, "wrong_workspace")
        self.assertEqual(self.check(receipt, environment="test").reason, "wrong_environment")
        self.assertEqual(self.check(receipt, now=payload(receipt)["exp"]).reason, "expired")

        header, body, signature = receipt.split(".")
        changed = dict(payload(receipt), action_sha256=receipt_action_hash("read_balance", {"account": "A-9"}))
        self.assertEqual(self.check("%s.%s.%s" % (header, b64(changed), signature), {"account": "A-9"}).reason, "bad_signature")
        self.assertEqual(self.check("%s.%s.%s" % (header, body, signature[:-4] + "AAAA")).reason, "bad_signature")
        kid = dict(decoded(header), kid="attacker")
        self.assertEqual(self.check("%s.%s.%s" % (b64(kid), body, signature)).reason, "unknown_key")
        unsigned = dict(kid, alg="none")
        self.assertEqual(self.check("%s.%s." % (b64(unsigned), body)).reason, "unsupported_algorithm")


if __name__ == "__main__":
    unittest.main()
