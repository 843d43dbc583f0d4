"""Shared by the tests: the package from this checkout, and the service the Node test started.

test/python-sdk.test.ts starts the real service and sets APPROVALS_URL, APPROVALS_KEY and the
rest before it runs ``python3 -m unittest discover -s packages/python/tests``. Without them the
suites that need the service are skipped; the others (Ed25519, canonical JSON, retries against a
stand-in, webhook signatures) run anywhere.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import unittest
import urllib.error
import urllib.request
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

URL = os.environ.get("APPROVALS_URL", "")
KEY = os.environ.get("APPROVALS_KEY", "")
SPARE_KEY = os.environ.get("APPROVALS_SPARE_KEY", "")
FILES = os.environ.get("APPROVALS_TEST_FILES", "")
HELPER = os.environ.get("APPROVALS_TEST_HELPER", "")

needs_service = unittest.skipUnless(
    URL and KEY and FILES and HELPER, "APPROVALS_URL etc. are not set: run through test/python-sdk.test.ts"
)


def path(name: str) -> str:
    return os.path.join(FILES, name)


def read_json(name: str) -> Any:
    with open(path(name), encoding="utf-8") as file:
        return json.load(file)


def _helper(route: str, body: Dict[str, Any]) -> Any:
    request = urllib.request.Request(
        HELPER + route,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        raise AssertionError("the test helper failed %s: %s" % (route, error.read().decode("utf-8", "replace"))) from None


class Decider:
    """Decides the hold with ``idempotency_key`` as the workspace admin once it is stored, from a
    thread, while the test waits for the decision through the API. ``join()`` re-raises a failure."""

    def __init__(self, idempotency_key: str, verdict: str, comment: str = "") -> None:
        self.errors: List[BaseException] = []
        self.result: Dict[str, Any] = {}

        def run() -> None:
            try:
                self.result = _helper(
                    "/decide", {"idempotency_key": idempotency_key, "verdict": verdict, "comment": comment or None}
                )
            except BaseException as error:  # noqa: BLE001 - handed to join()
                self.errors.append(error)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self) -> Dict[str, Any]:
        self.thread.join(60)
        if self.errors:
            raise self.errors[0]
        return self.result


def exhaust_spare_window() -> None:
    """The spare workspace's ``v1`` requests are used up, 4 s before its window ends."""
    _helper("/exhaust", {})
