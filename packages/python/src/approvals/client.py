"""The client of the Hold API: submit a hold, read it, wait for its decision."""

from __future__ import annotations

import http.client
import json
import math
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from .errors import ApprovalsApiError, ApprovalsError, ApprovalsNetworkError, RateLimit

__all__ = ["Client", "Decision", "AgentIdentity"]

#: ``{"id": "billing-bot", "label": "Billing bot"}``, or just the id as a string.
AgentIdentity = Union[str, Mapping[str, Any]]

DEFAULT_WAIT_SECONDS = 15 * 60
DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
#: The longest long-poll round the service allows.
MAX_WAIT_ROUND_SECONDS = 60
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
#: A Retry-After beyond one rate-limit window is not waited for: the caller decides.
MAX_RETRY_AFTER_SECONDS = 60
RETRYABLE_STATUSES = frozenset((500, 502, 503, 504))


@dataclass(frozen=True)
class Decision:
    """Where a hold stands.

    ``approved``: the action may run (allowed by a rule, or approved by the people required).
    ``rejected``: it must not run (denied by a rule, or rejected by a person). Neither: expired, or
    still ``pending`` (nobody decided within the wait).
    """

    #: The reference, ``svc_pa_…``.
    reference: str
    #: The stored status: pending, auto_allowed, approved, rejected, expired (executed or failed on
    #: the MCP proxy path).
    status: str
    approved: bool
    rejected: bool
    #: A rule's denial reason or the approver's comment; None when none was given.
    reason: Optional[str]
    #: ``approve`` or ``reject``; None while pending, for allowed and for expired holds.
    verdict: Optional[str]
    #: How it was decided: inbox, email, sms, slack, teams, widget, mcp_client, rule or agent;
    #: None without a decision.
    channel: Optional[str]
    decided_at: Optional[str]
    #: The public status page: safe to link from tickets and chats.
    status_url: str
    #: True when the idempotency key had been used before and this is the original hold.
    replayed: bool = False
    #: The idempotency key the hold was submitted with (when this client submitted it).
    idempotency_key: Optional[str] = None
    #: The full hold record (GET /api/v1/holds/:id) when the SDK read one, else None.
    record: Optional[Dict[str, Any]] = None
    #: The signed receipt of an approved or allowed hold, for the system that performs the action
    #: (``verify_receipt``); None otherwise.
    receipt: Optional[str] = None
    #: An approver changed the arguments before approving (a rule's ``editable``): run ``arguments``.
    changed: bool = False
    #: What to run: the changed arguments, else (from ``hold``) those submitted; None from ``wait`` or
    #: ``get_hold`` of a hold nobody changed.
    arguments: Optional[Dict[str, Any]] = None

    @property
    def id(self) -> str:
        """The reference (the API's name for it)."""
        return self.reference

    @property
    def pending(self) -> bool:
        return self.status == "pending"


class Client:
    """A client of one workspace's Hold API.

    ``Client("https://approvals.example.com", "svc_live_…")``. Every call retries where a retry
    is safe: after a 429 once its ``Retry-After`` has passed (up to 60 s), and after network errors
    and 500/502/503/504 answers with exponential backoff (0.5 s, 1 s, 2 s … up to 8 s, jittered),
    at most ``max_retries`` times. Other errors raise ``ApprovalsApiError`` at once.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        agent_identity: Optional[AgentIdentity] = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        """``agent_identity`` is the default for ``hold()`` and ``@requires_approval``.
        ``request_timeout`` (seconds) is how long one attempt may take before it counts as a
        network error; a long-poll round adds its own wait to it."""
        if not isinstance(api_key, str) or api_key == "":
            raise TypeError("Client: api_key is required (svc_live_… or svc_test_…)")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise TypeError("Client: base_url must be an http:// or https:// address")
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.agent_identity = _identity(agent_identity) if agent_identity is not None else None
        self.max_retries = max_retries
        self.request_timeout = request_timeout
        self._sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:  # never shows the key
        return "Client(%r)" % self.base_url

    def hold(
        self,
        tool_name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        agent_identity: Optional[AgentIdentity] = None,
        context: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
        wait: Union[bool, float] = True,
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> Decision:
        """Submits a hold: may ``tool_name`` run with these ``arguments``?

        By default waits for the decision, by long-poll, for up to ``timeout`` seconds (default 15
        minutes); a hold nobody decided in time comes back with ``status == "pending"``. A number
        as ``wait`` is the seconds to wait instead (``wait=2``: up to 2 s). With ``wait=False`` it
        returns as soon as the rules have answered. Any other ``wait`` raises ``TypeError``.

        ``idempotency_key``: one per logical action. When not given, one is made (a random UUID)
        and used for every retry of this call, so a retry never makes a second hold; pass your own
        to make calls across restarts one hold. The key used is ``decision.idempotency_key``.
        """
        wait_seconds = _wait_seconds(wait, timeout)
        identity = _identity(agent_identity) if agent_identity is not None else self.agent_identity
        if identity is None:
            raise TypeError("hold(): agent_identity is required (here or in Client(agent_identity=…))")
        if idempotency_key is None:
            idempotency_key = str(uuid.uuid4())
        if not isinstance(idempotency_key, str) or idempotency_key == "":
            raise TypeError("hold(): idempotency_key must be a non-empty string")
        submission: Dict[str, Any] = {
            "tool_name": tool_name,
            "agent_identity": identity,
            "idempotency_key": idempotency_key,
        }
        if arguments is not None:
            submission["arguments"] = arguments
        if context is not None:
            submission["context"] = context
        body = json.dumps(submission, allow_nan=False).encode("ascii")
        created, replayed = self._call("POST", "/api/v1/holds", body)
        reference = created.get("id")
        if not isinstance(reference, str):
            raise ApprovalsError("The answer to a submission has no hold reference; is base_url right?")
        status_url = created.get("status_url") or self._status_url(reference)
        status = created.get("status")
        submitted = arguments if arguments is not None else {}
        if status == "allowed":
            return _undecided(
                reference, "auto_allowed", status_url, replayed, idempotency_key, submitted, True, created.get("receipt")
            )
        if status == "pending" and wait_seconds is not None:
            decided = self.wait(reference, timeout=wait_seconds)
        elif status == "pending" and not replayed:
            return _undecided(reference, "pending", status_url, False, idempotency_key, submitted)
        else:
            # A denial's reason is in the record; a replayed pending hold may have been decided since.
            decided = self.get_hold(reference)
        return replace(
            decided,
            status_url=status_url,
            replayed=replayed,
            idempotency_key=idempotency_key,
            arguments=decided.arguments if decided.arguments is not None else submitted,
        )

    def get_hold(self, reference: str) -> Decision:
        """Reads a hold once."""
        record, _ = self._call("GET", "/api/v1/holds/" + _quote(reference), None)
        return _decision(record, self._status_url(reference))

    def wait(self, reference: str, timeout: float = DEFAULT_WAIT_SECONDS) -> Decision:
        """Long-polls until the hold is decided or ``timeout`` seconds pass, in rounds of at most
        60 s; the service is asked at least once. Returns the hold either way: its ``status`` is
        still ``pending`` when nobody decided in time (this does not raise)."""
        deadline = time.monotonic() + timeout
        while True:
            seconds = min(MAX_WAIT_ROUND_SECONDS, max(1, math.ceil(deadline - time.monotonic())))
            body = json.dumps({"timeout_seconds": seconds}).encode("utf-8")
            record, _ = self._call("POST", "/api/v1/holds/%s/wait" % _quote(reference), body, seconds)
            if record.get("status") != "pending" or time.monotonic() >= deadline:
                return _decision(record, self._status_url(reference))

    def _status_url(self, reference: str) -> str:
        return "%s/a/%s" % (self.base_url, _quote(reference))

    def _call(
        self, method: str, path: str, body: Optional[bytes], extra_timeout: float = 0
    ) -> Tuple[Dict[str, Any], bool]:
        """One operation, with retries where repeating is safe. All three operations are: reads
        and the long-poll change nothing, and a repeated submission is answered by its key."""
        headers = {
            "Authorization": "Bearer " + self._api_key,
            "Accept": "application/json",
            "User-Agent": "approvals-python",
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            request = urllib.request.Request(self.base_url + path, data=body, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.request_timeout + extra_timeout) as response:
                    status, answer_headers, text = response.status, response.headers, response.read()
            except urllib.error.HTTPError as error:
                status, answer_headers = error.code, error.headers
                try:
                    text = error.read()
                except (OSError, http.client.HTTPException):
                    text = b""
                finally:
                    error.close()
            except (OSError, http.client.HTTPException, socket.timeout) as error:
                if attempt >= self.max_retries:
                    raise ApprovalsNetworkError(
                        "The approvals service could not be reached (%s)" % _describe(error)
                    ) from error
                self._sleep(_backoff(attempt))
                attempt += 1
                continue
            if 200 <= status < 300:
                parsed = _parse_json(text)
                # A 2xx that is not JSON is not the service (a proxy's page, a wrong base_url).
                if not isinstance(parsed, dict):
                    raise ApprovalsError("The answer from %s is not JSON; is base_url right?" % path)
                return parsed, str(answer_headers.get("Idempotent-Replayed", "")).lower() == "true"
            rate_limit = RateLimit.from_headers(answer_headers)
            error = ApprovalsApiError(status, _parse_json(text), rate_limit)
            if status == 429:
                delay: Optional[float] = float(
                    rate_limit.retry_after_seconds if rate_limit.retry_after_seconds is not None else 1
                )
            elif status in RETRYABLE_STATUSES:
                delay = _backoff(attempt)
            else:
                delay = None
            if delay is None or attempt >= self.max_retries or delay > MAX_RETRY_AFTER_SECONDS:
                raise error
            self._sleep(delay)
            attempt += 1


def _wait_seconds(wait: Union[bool, float], timeout: float) -> Optional[float]:
    """hold()'s ``wait`` as seconds, None for no wait. bool is an int in Python, so it is asked first:
    True is the ``timeout``, not one second."""
    if isinstance(wait, bool):
        return timeout if wait else None
    if not isinstance(wait, (int, float)):
        raise TypeError("hold(): wait must be True, False or a number of seconds, not %s" % type(wait).__name__)
    if not math.isfinite(wait) or wait < 0:
        raise ValueError("hold(): wait must be a finite number of seconds, 0 or more")
    return wait


def _identity(value: AgentIdentity) -> Dict[str, Any]:
    if isinstance(value, str):
        return {"id": value}
    if isinstance(value, Mapping) and isinstance(value.get("id"), str):
        return dict(value)
    raise TypeError('agent_identity must be a string or a mapping like {"id": "billing-bot", "label": "…"}')


def _decision(record: Dict[str, Any], status_url: str) -> Decision:
    status = record.get("status", "")
    decision = record.get("decision") if isinstance(record.get("decision"), dict) else None
    verdict = decision.get("verdict") if decision else None
    return Decision(
        reference=record.get("id", ""),
        status=status,
        approved=status == "auto_allowed" or verdict == "approve",
        rejected=verdict == "reject",
        reason=decision.get("reason") if decision else None,
        verdict=verdict,
        channel=decision.get("channel") if decision else None,
        decided_at=decision.get("decided_at") if decision else None,
        status_url=status_url,
        record=record,
        receipt=record.get("receipt"),
        changed=record.get("arguments_changed") is True,
        arguments=decision.get("changed_arguments") if decision else None,
    )


def _undecided(
    reference: str,
    status: str,
    status_url: str,
    replayed: bool,
    idempotency_key: str,
    submitted: Dict[str, Any],
    approved: bool = False,
    receipt: Optional[str] = None,
) -> Decision:
    """A hold the submission's answer says everything about: allowed (with its receipt), or pending."""
    return Decision(
        reference=reference,
        status=status,
        approved=approved,
        rejected=False,
        reason=None,
        verdict=None,
        channel=None,
        decided_at=None,
        status_url=status_url,
        replayed=replayed,
        idempotency_key=idempotency_key,
        receipt=receipt,
        arguments=submitted,
    )


def _quote(reference: str) -> str:
    return urllib.parse.quote(str(reference), safe="")


def _backoff(attempt: int) -> float:
    """Exponential backoff with jitter: 0.5 s, 1 s, 2 s … up to 8 s, each between half and all of it."""
    ceiling = min(BACKOFF_MAX, BACKOFF_BASE * 2**attempt)
    return ceiling / 2 + random.random() * (ceiling / 2)


def _parse_json(text: bytes) -> Any:
    try:
        return json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def _describe(error: BaseException) -> str:
    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        return str(error.reason)
    return str(error) or type(error).__name__
