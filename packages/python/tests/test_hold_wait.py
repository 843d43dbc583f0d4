"""hold(wait=…): True waits the default (``timeout``), False not at all, a number that many seconds;
anything else is refused before any request. Against the scripted stand-in of test_retries."""

from __future__ import annotations

import unittest
from typing import Any

import _support  # noqa: F401
from approvals import Client
from test_retries import StandIn

PENDING = (201, {}, {"id": "svc_pa_standin", "status": "pending", "status_url": "http://x/a/svc_pa_standin"})
APPROVED = (200, {}, {"id": "svc_pa_standin", "status": "approved", "decision": {"verdict": "approve"}})


class HoldWait(unittest.TestCase):
    def client(self, *replies: Any) -> "tuple[Client, StandIn]":
        server = StandIn(*replies)
        self.addCleanup(server.close)
        return Client(server.url, "svc_test_standin", agent_identity="bot"), server

    def wait_rounds(self, server: StandIn) -> "list[int]":
        return [r["body"]["timeout_seconds"] for r in server.requests if r["path"].endswith("/wait")]

    def test_a_number_is_seconds(self) -> None:
        for wait in (2, 2.5):
            with self.subTest(wait=wait):
                client, server = self.client(PENDING, APPROVED)
                self.assertTrue(client.hold("send_invoice", wait=wait).approved)
                self.assertEqual(self.wait_rounds(server), [2 if wait == 2 else 3])

    def test_true_waits_the_timeout_and_false_not_at_all(self) -> None:
        client, server = self.client(PENDING, APPROVED)
        self.assertTrue(client.hold("send_invoice", wait=True).approved)
        self.assertEqual(self.wait_rounds(server), [60], "the first round of the 15-minute default")
        client, server = self.client(PENDING, APPROVED)
        self.assertTrue(client.hold("send_invoice", wait=False).pending)
        self.assertEqual(self.wait_rounds(server), [])

    def test_anything_else_is_refused_before_any_request(self) -> None:
        client, server = self.client(PENDING)
        for wait in ("2", None, [2]):
            with self.subTest(wait=wait), self.assertRaises(TypeError):
                client.hold("send_invoice", wait=wait)  # type: ignore[arg-type]
        for wait in (-1, float("nan"), float("inf")):
            with self.subTest(wait=wait), self.assertRaises(ValueError):
                client.hold("send_invoice", wait=wait)
        self.assertEqual(server.requests, [])


if __name__ == "__main__":
    unittest.main()
