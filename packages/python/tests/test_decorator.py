"""``@requires_approval`` on plain functions: how a call's arguments are mapped (here), and the
function running only when the real service's rules or people approve (against the service)."""

from __future__ import annotations

import datetime
import unittest
import uuid
from typing import Any, List

import _support
from approvals import Client, Decision, NotApproved, call_arguments, requires_approval


def send_invoice(customer: str, amount: float, currency: str = "EUR", *items: str, **extra: Any) -> str:
    return "sent %s %s %s" % (customer, amount, currency)


class ArgumentMapping(unittest.TestCase):
    def test_by_parameter_name_with_defaults_varargs_and_kwargs(self) -> None:
        self.assertEqual(
            call_arguments(send_invoice, ("C-1", 120, "USD", "a", "b"), {"note": "x"}),
            {"customer": "C-1", "amount": 120, "currency": "USD", "items": ["a", "b"], "note": "x"},
        )
        self.assertEqual(
            call_arguments(send_invoice, (), {"amount": 5, "customer": "C-2"}),
            {"customer": "C-2", "amount": 5, "currency": "EUR", "items": []},
        )

    def test_arguments_json_cannot_hold_are_refused_before_any_request(self) -> None:
        client = Client("http://127.0.0.1:9", "svc_test_x")
        calls: List[int] = []

        @requires_approval(client, tool_name="send_invoice")
        def pay(when: datetime.date) -> None:
            calls.append(1)

        with self.assertRaisesRegex(TypeError, "JSON-serializable"):
            pay(datetime.date(2026, 1, 1))
        with self.assertRaises(TypeError):
            call_arguments(send_invoice, (), {})  # a required parameter is missing
        self.assertEqual(calls, [])


class ApprovedWithChanges(unittest.TestCase):
    """An approver changed the call (a rule's ``editable``): it runs as changed, never as submitted."""

    def client_answering(self, changed: Any) -> Client:
        client = Client("http://127.0.0.1:9", "svc_test_x")
        decision = Decision(
            reference="svc_pa_1",
            status="approved",
            approved=True,
            rejected=False,
            reason=None,
            verdict="approve",
            channel="inbox",
            decided_at="2026-11-29T00:00:00.000Z",
            status_url="http://127.0.0.1:9/a/svc_pa_1",
            changed=True,
            arguments=changed,
        )
        client.hold = lambda **_: decision  # type: ignore[method-assign]
        return client

    def test_the_function_runs_with_the_changed_arguments(self) -> None:
        changed = {"customer": "C-1", "amount": 90, "currency": "USD", "items": ["a"], "note": "y"}
        pay = requires_approval(self.client_answering(changed), tool_name="send_invoice")(send_invoice)
        self.assertEqual(pay("C-1", 120, "USD", "a", note="x"), "sent C-1 90 USD")

    def test_a_hand_made_mapping_cannot_be_applied_back_so_nothing_runs(self) -> None:
        calls: List[int] = []

        @requires_approval(
            self.client_answering({"total": 1}), tool_name="send_invoice", arguments=lambda amount: {"total": amount}
        )
        def pay(amount: int) -> None:
            calls.append(amount)

        with self.assertRaisesRegex(NotApproved, "approved with changes"):
            pay(5)
        self.assertEqual(calls, [])


@_support.needs_service
class AgainstTheService(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(_support.URL, _support.KEY)
        self.calls: List[Any] = []

    def test_an_allowed_tool_runs_at_once(self) -> None:
        @requires_approval(self.client, tool_name="read_balance")
        def read_balance(account: str) -> str:
            self.calls.append(account)
            return "balance of " + account

        self.assertEqual(read_balance("A-1"), "balance of A-1")
        self.assertEqual(self.calls, ["A-1"])
        self.assertEqual(read_balance.__name__, "read_balance")
        self.assertEqual(read_balance.last_decision.status, "auto_allowed")
        record = self.client.get_hold(read_balance.last_decision.reference).record
        self.assertEqual(record["agent_identity"]["id"], "%s.%s" % (__name__, "AgainstTheService.test_an_allowed_tool_runs_at_once.<locals>.read_balance"))

    def test_a_denied_tool_never_runs(self) -> None:
        @requires_approval(self.client, tool_name="delete_account", agent_identity="cleanup-bot")
        def delete_account(account: str) -> None:
            self.calls.append(account)

        with self.assertRaises(NotApproved) as caught:
            delete_account("A-1")
        self.assertEqual(self.calls, [])
        decision = caught.exception.decision
        self.assertEqual((decision.status, decision.rejected, decision.reason), ("rejected", True, "Accounts are closed by support"))
        self.assertIn("Accounts are closed by support", str(caught.exception))

    def test_runs_once_a_person_approves_and_not_when_they_reject(self) -> None:
        run = uuid.uuid4().hex

        @requires_approval(
            self.client,
            tool_name="send_invoice",
            agent_identity={"id": "billing-bot", "label": "Billing bot"},
            context={"ticket": "T-7"},
            idempotency_key=lambda customer, amount: "invoice-%s-%s" % (run, customer),
            timeout=60,
        )
        def invoice(customer: str, amount: float) -> str:
            self.calls.append(customer)
            return "sent to " + customer

        decider = _support.Decider("invoice-%s-C-1" % run, "approve", "ok")
        self.assertEqual(invoice("C-1", 120), "sent to C-1")
        decider.join()
        self.assertEqual(invoice.last_decision.reason, "ok")

        decider = _support.Decider("invoice-%s-C-2" % run, "reject", "wrong customer")
        with self.assertRaises(NotApproved) as caught:
            invoice("C-2", 80)
        decider.join()
        self.assertEqual(caught.exception.decision.reason, "wrong customer")
        self.assertEqual(self.calls, ["C-1"])

        # The same key again is the same hold: its approval stands, and no second hold is made.
        self.assertEqual(invoice("C-1", 120), "sent to C-1")
        self.assertTrue(invoice.last_decision.replayed)

    def test_no_decision_in_time_does_not_run(self) -> None:
        @requires_approval(self.client, tool_name="send_invoice", agent_identity="billing-bot", timeout=1)
        def invoice(customer: str) -> None:
            self.calls.append(customer)

        with self.assertRaises(NotApproved) as caught:
            invoice("C-3")
        self.assertEqual(caught.exception.decision.status, "pending")
        self.assertIn("still pending", str(caught.exception))
        self.assertEqual(self.calls, [])


if __name__ == "__main__":
    unittest.main()
