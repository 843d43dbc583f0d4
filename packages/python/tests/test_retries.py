"""Retries, against a stand-in: a loopback HTTP server whose answers each test scripts, so that a
429 with Retry-After, a 503 and a dropped connection happen exactly when wanted. (The same against
the real service is in test_service.py.)"""

from __future__ import annotations

import json
import socket
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

import _support  # noqa: F401
from approvals import ApprovalsApiError, ApprovalsError, ApprovalsNetworkError, Client

CREATED = (201, {}, {"id": "svc_pa_standin", "status": "allowed", "status_url": "http://x/a/svc_pa_standin"})
Reply = Tuple[int, Dict[str, str], Any]


class StandIn:
    """Answers requests with the scripted replies in order (the last one repeats); records each
    request's method, path, headers, body and arrival time."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: List[Dict[str, Any]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stand_in.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers.items()),
                        "body": json.loads(body) if body else None,
                        "at": time.monotonic(),
                    }
                )
                index = min(len(stand_in.requests), len(stand_in.replies)) - 1
                status, headers, payload = stand_in.replies[index]
                if status == 0:  # drop the connection without an answer
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                data = payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode("utf-8")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = answer
            do_POST = answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Retries(unittest.TestCase):
    def stand_in(self, *replies: Reply) -> StandIn:
        stand_in = StandIn(*replies)
        self.addCleanup(stand_in.close)
        return stand_in

    def client(self, url: str, **options: Any) -> Client:
        return Client(url, "svc_test_standin", agent_identity="bot", **options)

    def test_429_waits_retry_after_then_goes_on(self) -> None:
        server = self.stand_in((429, {"Retry-After": "1", "RateLimit-Limit": "120"}, {"error": "rate_limited"}), CREATED)
        decision = self.client(server.url).hold("read_balance", arguments={"amount": 1})
        self.assertEqual(decision.status, "auto_allowed")
        self.assertEqual(len(server.requests), 2)
        self.assertGreaterEqual(server.requests[1]["at"] - server.requests[0]["at"], 0.95, "waited Retry-After")
        # The retry is the same submission, with the same idempotency key.
        self.assertEqual(server.requests[0]["body"], server.requests[1]["body"])
        self.assertEqual(decision.idempotency_key, server.requests[0]["body"]["idempotency_key"])

    def test_503_is_retried_with_backoff(self) -> None:
        server = self.stand_in((503, {}, {"error": "unavailable"}), (502, {}, "<html>gateway</html>"), CREATED)
        decision = self.client(server.url).hold("read_balance")
        self.assertTrue(decision.approved)
        self.assertEqual([r["method"] for r in server.requests], ["POST"] * 3)
        keys = {r["body"]["idempotency_key"] for r in server.requests}
        self.assertEqual(len(keys), 1, "one key for every attempt")

    def test_a_dropped_connection_is_retried(self) -> None:
        server = self.stand_in((0, {}, ""), CREATED)
        self.assertTrue(self.client(server.url).hold("read_balance").approved)
        self.assertEqual(len(server.requests), 2)

    def test_retries_end_with_the_last_error(self) -> None:
        server = self.stand_in((503, {"RateLimit-Remaining": "7"}, {"error": "unavailable"}))
        with self.assertRaises(ApprovalsApiError) as caught:
            self.client(server.url, max_retries=1).get_hold("svc_pa_x")
        self.assertEqual((caught.exception.status, caught.exception.code), (503, "unavailable"))
        self.assertEqual(caught.exception.rate_limit.remaining, 7)
        self.assertEqual(len(server.requests), 2)

    def test_a_long_retry_after_or_no_retries_raises_at_once_with_the_figures(self) -> None:
        limited = (
            429,
            {"Retry-After": "120", "RateLimit-Limit": "120", "RateLimit-Remaining": "0", "RateLimit-Reset": "42"},
            {"error": "rate_limited"},
        )
        server = self.stand_in(limited)
        with self.assertRaises(ApprovalsApiError) as caught:
            self.client(server.url).get_hold("svc_pa_x")
        error = caught.exception
        self.assertEqual((error.status, error.code, error.retry_after), (429, "rate_limited", 120))
        self.assertEqual((error.rate_limit.limit, error.rate_limit.remaining, error.rate_limit.reset_seconds), (120, 0, 42))
        self.assertEqual(len(server.requests), 1)
        server.replies[0] = (429, {"Retry-After": "1"}, {"error": "rate_limited"})
        with self.assertRaises(ApprovalsApiError):
            self.client(server.url, max_retries=0).get_hold("svc_pa_x")
        self.assertEqual(len(server.requests), 2)

    def test_other_errors_are_not_retried(self) -> None:
        for status, code in ((400, "invalid_json"), (401, "unauthorized"), (404, "not_found"), (422, "validation_failed")):
            with self.subTest(status=status):
                server = self.stand_in((status, {}, {"error": code, "detail": "tool_name: bad", "issues": []}))
                with self.assertRaises(ApprovalsApiError) as caught:
                    self.client(server.url).hold("read_balance", arguments={"secret": "hunter2"})
                self.assertEqual((caught.exception.status, caught.exception.code), (status, code))
                self.assertNotIn("hunter2", str(caught.exception))
                self.assertEqual(len(server.requests), 1)

    def test_an_internal_error_carries_its_reference(self) -> None:
        server = self.stand_in((500, {}, {"error": "internal", "referenceId": "ref-123"}))
        with self.assertRaises(ApprovalsApiError) as caught:
            self.client(server.url, max_retries=0).get_hold("svc_pa_x")
        self.assertEqual(caught.exception.reference_id, "ref-123")

    def test_nobody_listening_is_a_network_error_after_the_retries(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with self.assertRaises(ApprovalsNetworkError) as caught:
            self.client("http://127.0.0.1:%d" % port, max_retries=1).get_hold("svc_pa_x")
        self.assertIsInstance(caught.exception, ApprovalsError)
        self.assertIsNone(caught.exception.status)

    def test_a_2xx_that_is_not_json_is_not_the_service(self) -> None:
        server = self.stand_in((200, {"Content-Type": "text/html"}, "<html>login</html>"))
        with self.assertRaisesRegex(ApprovalsError, "not JSON; is base_url right"):
            self.client(server.url).get_hold("svc_pa_x")

    def test_request_shape_and_a_replayed_answer(self) -> None:
        server = self.stand_in((200, {"Idempotent-Replayed": "true"}, CREATED[2]))
        decision = Client(server.url + "/", "svc_test_standin").hold(
            "read_balance",
            arguments={"amount": 12.5},
            agent_identity={"id": "bot", "label": "Bot"},
            context={"ticket": "T-1"},
            idempotency_key="invoice-1",
        )
        self.assertTrue(decision.replayed)
        request = server.requests[0]
        self.assertEqual(request["path"], "/api/v1/holds")
        self.assertEqual(request["headers"]["Authorization"], "Bearer svc_test_standin")
        self.assertEqual(request["headers"]["Content-Type"], "application/json")
        self.assertEqual(
            request["body"],
            {
                "tool_name": "read_balance",
                "arguments": {"amount": 12.5},
                "agent_identity": {"id": "bot", "label": "Bot"},
                "context": {"ticket": "T-1"},
                "idempotency_key": "invoice-1",
            },
        )

    def test_bad_arguments_are_refused_before_any_request(self) -> None:
        with self.assertRaises(TypeError):
            Client("ftp://x", "svc_test_x")
        with self.assertRaises(TypeError):
            Client("http://x", "")
        client = Client("http://127.0.0.1:9", "svc_test_x")
        with self.assertRaises(TypeError):
            client.hold("read_balance")  # no agent identity
        with self.assertRaises(TypeError):
            client.hold("read_balance", agent_identity="bot", idempotency_key="")
        self.assertNotIn("svc_test_x", repr(client))


if __name__ == "__main__":
    unittest.main()
