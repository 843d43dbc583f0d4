"""Passkey-signed decisions checked offline, on entries signed with Node's crypto (fixtures/)."""

from __future__ import annotations

import copy
import json
import os
import unittest

from approvals import verify_signed_decision, verify_signed_decisions

_FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "signed_decisions.json")


class SignedDecisionsTest(unittest.TestCase):
    def setUp(self) -> None:
        with open(_FIXTURE, encoding="utf-8") as file:
            fixture = json.load(file)
        self.entries = fixture["entries"]
        self.cases = fixture["cases"]
        self.by_seq = {entry["seq"]: entry for entry in self.entries}

    def test_each_case_of_the_fixture(self) -> None:
        report = verify_signed_decisions(self.entries)
        self.assertEqual(report.checked, len(self.cases))
        self.assertEqual(
            [(item["seq"], item["reason"]) for item in report.invalid],
            [(case["seq"], case["reason"]) for case in self.cases if not case["valid"]],
        )

    def test_one_decision_with_its_hold_and_enrolment(self) -> None:
        decision = self.by_seq[self.cases[0]["seq"]]
        submitted = next(
            e for e in self.entries if e["type"] == "hold.submitted" and e["data"]["hold"] == decision["data"]["hold"]
        )
        enrolment = next(
            e
            for e in self.entries
            if e["type"] == "passkey.enrolled"
            and e["data"]["credential_id"] == decision["data"]["passkey"]["credential_id"]
        )
        check = verify_signed_decision(decision, submitted, enrolment)
        self.assertTrue(check.valid, check.reason)
        self.assertEqual(check.member, {"id": "mem_ann", "email": "ann@acme.test"})
        # Any change to what was approved, or to the assertion, fails.
        tampered = copy.deepcopy(submitted)
        tampered["data"]["arguments"]["iban"] = "GB33BUKB20201555555555"
        self.assertEqual(verify_signed_decision(decision, tampered, enrolment).reason, "challenge_mismatch")
        other_hold = copy.deepcopy(submitted)
        other_hold["data"]["hold"] = "svc_pa_other"
        self.assertEqual(verify_signed_decision(decision, other_hold, enrolment).reason, "wrong_hold")
        broken = copy.deepcopy(decision)
        signature = broken["data"]["passkey"]["signature"]
        broken["data"]["passkey"]["signature"] = signature[:-4] + ("AAAA" if signature[-4:] != "AAAA" else "BBBB")
        self.assertIn(verify_signed_decision(broken, submitted, enrolment).reason, ("bad_signature",))
        garbled = copy.deepcopy(decision)
        garbled["data"]["passkey"]["client_data_json"] = "!!"
        self.assertEqual(verify_signed_decision(garbled, submitted, enrolment).reason, "malformed")
        unsigned = copy.deepcopy(decision)
        del unsigned["data"]["passkey"]
        self.assertEqual(verify_signed_decision(unsigned, submitted, enrolment).reason, "not_signed")


if __name__ == "__main__":
    unittest.main()
