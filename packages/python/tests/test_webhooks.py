"""Webhook signatures: a real delivery of the service, signed during a secret rotation, and made-up
ones for the edges (tolerance, Standard Webhooks headers, header shapes)."""

from __future__ import annotations

import base64
import os
import hashlib
import hmac
import json
import unittest
from email.message import Message

import _support
from approvals import verify_webhook, verify_webhook_signature

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode("ascii")
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode("ascii")
BODY = b'{"event":"hold.approved","id":"svc_pa_1","data":{"status":"approved"}}'
NOW = 1_800_000_000


def service_signature(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret[len("whsec_") :])
    signed = ("%s.%d." % (delivery_id, timestamp)).encode("utf-8") + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def headers(secrets=(SECRET,), timestamp=NOW, body=BODY, standard=True):
    made = {
        "X-Service-Signature": ",".join(service_signature(s, body) for s in secrets),
        "X-Service-Timestamp": str(timestamp),
    }
    if standard:
        made.update(
            {
                "webhook-id": "msg_1",
                "webhook-timestamp": str(timestamp),
                "webhook-signature": " ".join(standard_signature(s, "msg_1", timestamp, body) for s in secrets),
            }
        )
    return made


class MadeUpDeliveries(unittest.TestCase):
    def test_the_signature_alone(self) -> None:
        signature = service_signature(SECRET, BODY)
        self.assertTrue(verify_webhook_signature(BODY, signature, SECRET))
        self.assertTrue(verify_webhook_signature(BODY.decode("utf-8"), signature.upper(), SECRET))
        self.assertTrue(verify_webhook_signature(BODY, service_signature(OTHER, BODY) + ", " + signature, SECRET))
        self.assertFalse(verify_webhook_signature(BODY + b" ", signature, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, signature, OTHER))
        self.assertFalse(verify_webhook_signature(BODY, None, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, signature[:-2], SECRET))
        self.assertFalse(verify_webhook_signature(BODY, ",".join([signature] * 5), SECRET), "more than a few")
        with self.assertRaises(TypeError):
            verify_webhook_signature(BODY, signature, "")

    def test_a_fresh_delivery_with_both_schemes(self) -> None:
        self.assertTrue(verify_webhook(BODY, headers(), SECRET, now=NOW))
        self.assertTrue(verify_webhook(BODY, headers(standard=False), SECRET, now=NOW))
        # Header names in any letter case, as a list of pairs, or as http.server's Message.
        lower = {name.lower(): value for name, value in headers().items()}
        self.assertTrue(verify_webhook(BODY, lower, SECRET, now=NOW))
        self.assertTrue(verify_webhook(BODY, list(headers().items()), SECRET, now=NOW))
        message = Message()
        for name, value in headers().items():
            message[name] = value
        self.assertTrue(verify_webhook(BODY, message, SECRET, now=NOW))

    def test_rotation_either_secret_is_accepted(self) -> None:
        both = headers(secrets=(OTHER, SECRET))
        self.assertTrue(verify_webhook(BODY, both, SECRET, now=NOW))
        self.assertTrue(verify_webhook(BODY, both, OTHER, now=NOW))
        self.assertFalse(verify_webhook(BODY, both, "whsec_" + base64.b64encode(b"x" * 32).decode(), now=NOW))

    def test_timestamp_tolerance(self) -> None:
        self.assertTrue(verify_webhook(BODY, headers(), SECRET, now=NOW + 300))
        self.assertTrue(verify_webhook(BODY, headers(), SECRET, now=NOW - 300))
        self.assertFalse(verify_webhook(BODY, headers(), SECRET, now=NOW + 301))
        self.assertFalse(verify_webhook(BODY, headers(), SECRET, now=NOW - 301))
        self.assertTrue(verify_webhook(BODY, headers(), SECRET, now=NOW + 3600, tolerance=3600))
        no_time = headers(standard=False)
        del no_time["X-Service-Timestamp"]
        self.assertFalse(verify_webhook(BODY, no_time, SECRET, now=NOW))

    def test_a_replay_with_a_new_timestamp_fails(self) -> None:
        replayed = headers()
        replayed["X-Service-Timestamp"] = replayed["webhook-timestamp"] = str(NOW + 3600)
        self.assertFalse(verify_webhook(BODY, replayed, SECRET, now=NOW + 3600))
        mismatched = headers()
        mismatched["X-Service-Timestamp"] = str(NOW + 1)
        self.assertFalse(verify_webhook(BODY, mismatched, SECRET, now=NOW))

    def test_a_changed_body_or_a_missing_signature_fails(self) -> None:
        self.assertFalse(verify_webhook(BODY + b"\n", headers(), SECRET, now=NOW))
        unsigned = headers()
        del unsigned["X-Service-Signature"]
        self.assertFalse(verify_webhook(BODY, unsigned, SECRET, now=NOW))
        no_id = headers()
        del no_id["webhook-id"]
        self.assertFalse(verify_webhook(BODY, no_id, SECRET, now=NOW))


@_support.needs_service
class ARealDelivery(unittest.TestCase):
    """A hold.rejected delivery the service sent while two secrets signed (a rotation)."""

    def setUp(self) -> None:
        with open(_support.path("webhook-body.bin"), "rb") as file:
            self.body = file.read()
        self.headers = _support.read_json("webhook-headers.json")
        self.secret = os.environ["APPROVALS_WEBHOOK_SECRET"]
        self.previous = os.environ["APPROVALS_WEBHOOK_PREVIOUS_SECRET"]
        self.now = int(self.headers["x-service-timestamp"])

    def test_it_verifies_with_the_new_and_the_previous_secret(self) -> None:
        self.assertEqual(len(self.headers["x-service-signature"].split(",")), 2)
        self.assertTrue(verify_webhook(self.body, self.headers, self.secret))
        self.assertTrue(verify_webhook(self.body, self.headers, self.previous))
        self.assertTrue(verify_webhook_signature(self.body, self.headers["x-service-signature"], self.secret))
        self.assertEqual(json.loads(self.body)["event"], "hold.rejected")

    def test_a_changed_body_another_secret_or_an_old_delivery_does_not(self) -> None:
        self.assertFalse(verify_webhook(self.body.replace(b"rejected", b"approved"), self.headers, self.secret))
        self.assertFalse(verify_webhook(self.body, self.headers, self.secret + "x"))
        self.assertFalse(verify_webhook(self.body, self.headers, self.secret, now=self.now + 301))
        self.assertTrue(verify_webhook(self.body, self.headers, self.secret, now=self.now + 300))


if __name__ == "__main__":
    unittest.main()
