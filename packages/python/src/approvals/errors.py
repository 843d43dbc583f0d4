"""What the SDK raises. Every error is an ``ApprovalsError``; its subclass says what happened."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .client import Decision

__all__ = [
    "ApprovalsError",
    "ApprovalsApiError",
    "ApprovalsNetworkError",
    "NotApproved",
    "RateLimit",
]


class RateLimit:
    """The rate-limit headers of an answer; a figure is None when the header was absent."""

    __slots__ = ("limit", "remaining", "reset_seconds", "retry_after_seconds")

    def __init__(
        self,
        limit: Optional[int] = None,
        remaining: Optional[int] = None,
        reset_seconds: Optional[int] = None,
        retry_after_seconds: Optional[int] = None,
    ) -> None:
        self.limit = limit
        self.remaining = remaining
        #: Seconds until the window ends.
        self.reset_seconds = reset_seconds
        #: Seconds to wait before trying again (429 only).
        self.retry_after_seconds = retry_after_seconds

    @classmethod
    def from_headers(cls, headers: Any) -> "RateLimit":
        def figure(name: str) -> Optional[int]:
            value = headers.get(name) if headers is not None else None
            if value is None:
                return None
            value = str(value).strip()
            return int(value) if value.isdigit() else None

        return cls(
            figure("RateLimit-Limit"),
            figure("RateLimit-Remaining"),
            figure("RateLimit-Reset"),
            figure("Retry-After"),
        )

    def __repr__(self) -> str:
        return (
            "RateLimit(limit=%r, remaining=%r, reset_seconds=%r, retry_after_seconds=%r)"
            % (self.limit, self.remaining, self.reset_seconds, self.retry_after_seconds)
        )


class ApprovalsError(Exception):
    """Anything the SDK raises. Errors from the service carry the contract's fields (see
    ``ApprovalsApiError``); here they are None. No error ever repeats the request's payload."""

    status: Optional[int] = None
    code: Optional[str] = None
    detail: Optional[str] = None
    issues: List[Dict[str, str]] = []
    reference_id: Optional[str] = None
    retry_after: Optional[int] = None

    @property
    def message(self) -> str:
        return str(self)


class ApprovalsApiError(ApprovalsError):
    """The service answered with an error status.

    - ``status``: the HTTP status, e.g. 422.
    - ``code``: the contract's ``error``, e.g. ``validation_failed``, ``not_found``,
      ``unauthorized``, ``rate_limited``, ``internal``, ``unavailable`` (``http_<status>`` when the
      answer had none).
    - ``detail``: for ``validation_failed``, the first field problem.
    - ``issues``: for ``validation_failed``, every affected field, ``[{"field": "agent_identity.id",
      "message": "…"}]``.
    - ``reference_id``: for ``internal``, the id to quote to support.
    - ``retry_after``: seconds, from ``Retry-After`` (429).
    - ``rate_limit``: every rate-limit figure of the answer.
    - ``body``: the error body as the service sent it (it never holds the request's payload).
    """

    def __init__(self, status: int, body: Any, rate_limit: Optional[RateLimit] = None) -> None:
        fields: Mapping[str, Any] = body if isinstance(body, dict) else {}
        code = fields.get("error")
        detail = fields.get("detail")
        self.status = status
        self.code = code if isinstance(code, str) else "http_%d" % status
        self.detail = detail if isinstance(detail, str) else None
        issues = fields.get("issues")
        self.issues = [dict(issue) for issue in issues if isinstance(issue, dict)] if isinstance(issues, list) else []
        reference_id = fields.get("referenceId")
        self.reference_id = reference_id if isinstance(reference_id, str) else None
        self.rate_limit = rate_limit or RateLimit()
        self.retry_after = self.rate_limit.retry_after_seconds
        self.body = dict(fields) if fields else None
        text = "The approvals service answered %d %s" % (status, self.code)
        if self.detail:
            text += ": " + self.detail
        super().__init__(text)


class ApprovalsNetworkError(ApprovalsError):
    """No answer: the connection failed or an attempt timed out, after the allowed retries.
    ``__cause__`` holds the underlying error."""


class NotApproved(ApprovalsError):
    """Raised by ``@requires_approval`` when the action may not run: rejected (by a rule or a
    person), expired, or still pending when the wait ran out. ``decision`` says which."""

    def __init__(self, decision: "Decision") -> None:
        self.decision = decision
        if decision.rejected:
            why = "rejected" + (": " + decision.reason if decision.reason else "")
        elif decision.status == "pending":
            why = "no decision within the wait (still pending)"
        elif decision.approved and decision.changed:
            why = "approved with changes that arguments= cannot apply back: run decision.arguments yourself"
        else:
            why = decision.status
        super().__init__("Hold %s was not approved (%s); see %s" % (decision.reference, why, decision.status_url))
