"""The client against the real service: every outcome a hold can have, waiting, idempotent
replays, errors with the contract's fields, and a real 429 with Retry-After."""

from __future__ import annotations

import unittest
import uuid
from typing import Any, List

import _support
from approvals import ApprovalsApiError, ApprovalsError, Client


def key() -> str:
    return "py-" + uuid.uuid4().hex


@_support.needs_service
class AgainstTheService(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(_support.URL, _support.KEY, agent_identity={"id": "billing-bot", "label": "Billing bot"})

    def test_allowed_at_once(self) -> None:
        decision = self.client.hold(tool_name="read_balance", arguments={"account": "A-1"})
        self.assertEqual((decision.status, decision.approved, decision.rejected), ("auto_allowed", True, False))
        self.assertTrue(decision.reference.startswith("svc_pa_"))
        self.assertEqual(decision.status_url, "%s/a/%s" % (_support.URL, decision.reference))
        self.assertIsNone(decision.reason)
        self.assertFalse(decision.replayed)
        self.assertTrue(decision.idempotency_key, "a key was made")

    def test_denied_with_the_rule_reason(self) -> None:
        decision = self.client.hold(tool_name="delete_account", arguments={"account": "A-1"})
        self.assertEqual((decision.status, decision.approved, decision.rejected), ("rejected", False, True))
        self.assertEqual((decision.verdict, decision.reason, decision.channel), ("reject", "Accounts are closed by support", "rule"))

    def test_pending_then_approved_while_hold_waits(self) -> None:
        idempotency_key = key()
        decider = _support.Decider(idempotency_key, "approve", "fine")
        decision = self.client.hold(
            tool_name="send_invoice",
            arguments={"customer": "C-1042", "amount": 1200, "currency": "EUR"},
            context={"ticket": "T-1042"},
            idempotency_key=idempotency_key,
            timeout=60,
        )
        self.assertEqual(decision.reference, decider.join()["id"])
        self.assertEqual((decision.status, decision.approved, decision.rejected), ("approved", True, False))
        self.assertEqual((decision.verdict, decision.reason, decision.channel), ("approve", "fine", "inbox"))
        self.assertEqual(decision.record["approvals"]["received"], 1)
        self.assertEqual(decision.idempotency_key, idempotency_key)

    def test_wait_false_then_wait_sees_the_rejection(self) -> None:
        idempotency_key = key()
        submitted = self.client.hold(tool_name="send_invoice", idempotency_key=idempotency_key, wait=False)
        self.assertEqual((submitted.status, submitted.approved, submitted.rejected), ("pending", False, False))
        decider = _support.Decider(idempotency_key, "reject", "not this month")
        decision = self.client.wait(submitted.reference, timeout=60)
        decider.join()
        self.assertEqual((decision.status, decision.rejected, decision.reason), ("rejected", True, "not this month"))
        self.assertEqual(self.client.get_hold(submitted.reference).status, "rejected")

    def test_no_decision_within_the_timeout_is_still_pending(self) -> None:
        submitted = self.client.hold(tool_name="send_invoice", wait=False)
        decision = self.client.wait(submitted.reference, timeout=1)
        self.assertEqual((decision.status, decision.approved, decision.rejected, decision.verdict), ("pending", False, False, None))
        via_hold = self.client.hold(tool_name="send_invoice", timeout=1)
        self.assertTrue(via_hold.pending)

    def test_a_replay_is_the_same_hold_with_its_current_state(self) -> None:
        idempotency_key = key()
        first = self.client.hold(tool_name="send_invoice", arguments={"amount": 5}, idempotency_key=idempotency_key, wait=False)
        _support.Decider(idempotency_key, "approve").join()
        again = self.client.hold(tool_name="send_invoice", arguments={"amount": 5}, idempotency_key=idempotency_key, wait=False)
        self.assertEqual(again.reference, first.reference)
        self.assertTrue(again.replayed)
        # The replayed answer says "pending" (the first answer, unchanged); the SDK reads the truth.
        self.assertEqual((again.status, again.approved), ("approved", True))
        allowed = self.client.hold(tool_name="read_balance", idempotency_key=idempotency_key + "-r")
        replayed = self.client.hold(tool_name="read_balance", idempotency_key=idempotency_key + "-r")
        self.assertEqual((replayed.reference, replayed.replayed, replayed.status), (allowed.reference, True, "auto_allowed"))

    def test_the_same_key_for_another_action_is_refused(self) -> None:
        idempotency_key = key()
        self.client.hold(tool_name="read_balance", arguments={"amount": 5}, idempotency_key=idempotency_key)
        with self.assertRaises(ApprovalsApiError) as caught:
            self.client.hold(tool_name="read_balance", arguments={"amount": 6}, idempotency_key=idempotency_key)
        error = caught.exception
        self.assertEqual((error.status, error.code), (422, "validation_failed"))
        self.assertEqual([issue["field"] for issue in error.issues], ["idempotency_key"])

    def test_validation_errors_carry_the_contract_fields_and_no_payload(self) -> None:
        with self.assertRaises(ApprovalsError) as caught:
            self.client.hold(tool_name="bad tool name!", arguments={"card": "4111-secret"})
        error = caught.exception
        self.assertIsInstance(error, ApprovalsApiError)
        self.assertEqual((error.status, error.code), (422, "validation_failed"))
        self.assertEqual(error.issues[0]["field"], "tool_name")
        self.assertTrue(error.detail)
        self.assertEqual(error.rate_limit.limit, 120)
        self.assertIsNone(error.retry_after)
        for text in (str(error), error.message, repr(error.body)):
            self.assertNotIn("bad tool name!", text)
            self.assertNotIn("4111-secret", text)

    def test_unknown_reference_and_unknown_key(self) -> None:
        with self.assertRaises(ApprovalsApiError) as caught:
            self.client.get_hold("svc_pa_doesnotexistdoesnotexist")
        self.assertEqual((caught.exception.status, caught.exception.code), (404, "not_found"))
        with self.assertRaises(ApprovalsApiError) as caught:
            Client(_support.URL, "svc_live_nope").get_hold("svc_pa_x")
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "unauthorized"))


@_support.needs_service
class RateLimited(unittest.TestCase):
    def test_429_is_an_error_with_its_figures_or_waited_out(self) -> None:
        _support.exhaust_spare_window()
        impatient = Client(_support.URL, _support.SPARE_KEY, agent_identity="bot", max_retries=0)
        with self.assertRaises(ApprovalsApiError) as caught:
            impatient.hold(tool_name="read_balance")
        error = caught.exception
        self.assertEqual((error.status, error.code), (429, "rate_limited"))
        self.assertEqual((error.rate_limit.limit, error.rate_limit.remaining), (120, 0))
        self.assertTrue(error.retry_after is not None and 1 <= error.retry_after <= 4, error.retry_after)

        patient = Client(_support.URL, _support.SPARE_KEY, agent_identity="bot")
        waits: List[float] = []
        real_sleep = patient._sleep

        def recorded(seconds: float) -> Any:
            waits.append(seconds)
            return real_sleep(seconds)

        patient._sleep = recorded
        decision = patient.hold(tool_name="read_balance")
        self.assertEqual(decision.status, "auto_allowed")
        self.assertTrue(waits and 1 <= waits[0] <= 4, "waited what Retry-After said: %r" % waits)


if __name__ == "__main__":
    unittest.main()
