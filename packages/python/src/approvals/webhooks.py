"""Checking that a webhook delivery comes from the service (docs/webhooks.md)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from typing import Any, Iterable, Optional, Tuple, Union

__all__ = ["verify_webhook", "verify_webhook_signature", "DEFAULT_TOLERANCE_SECONDS"]

#: How far a delivery's timestamp may be from the receiver's clock.
DEFAULT_TOLERANCE_SECONDS = 300
_HEX_SIGNATURE = re.compile(r"^[0-9a-fA-F]{64}$")
_DIGITS = re.compile(r"^[0-9]{1,12}$")
#: During a secret rotation a header carries two signatures; more than a few is not ours.
_MAX_SIGNATURES = 4

Body = Union[bytes, bytearray, memoryview, str]


def verify_webhook_signature(body: Body, signature: Optional[str], secret: str) -> bool:
    """Whether ``signature`` (the ``X-Service-Signature`` header) is the hex HMAC-SHA256 of the raw
    ``body`` keyed with ``secret`` (the ``whsec_…`` string as shown, prefix included). During a
    rotation the header holds two comma-separated signatures; one match is enough. Every candidate is
    compared in constant time, and all of them are, so the time taken does not tell which matched."""
    _check_secret(secret)
    if not isinstance(signature, str):
        return False
    candidates = [part.strip() for part in signature.split(",")]
    if len(candidates) > _MAX_SIGNATURES:
        return False
    expected = hmac.new(secret.encode("utf-8"), _bytes(body), hashlib.sha256).digest()
    valid = False
    for candidate in candidates:
        if _HEX_SIGNATURE.match(candidate) and hmac.compare_digest(bytes.fromhex(candidate), expected):
            valid = True
    return valid


def verify_webhook(
    body: Body,
    headers: Any,
    secret: str,
    *,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> bool:
    """Whether a delivery is genuine and fresh. Pass the raw body exactly as received (before any
    JSON parsing) and the request's headers (a dict in any letter case, a list of pairs, or an
    ``email.message.Message``/``http.client.HTTPMessage`` as ``http.server`` gives them).

    - ``X-Service-Signature`` must match ``secret`` (either signature during a rotation).
    - The delivery's timestamp (``webhook-timestamp``, else ``X-Service-Timestamp``, unix seconds)
      must be within ``tolerance`` seconds (default 5 minutes) of ``now`` (default: this clock).
    - When the Standard Webhooks headers are there (``webhook-id``, ``webhook-timestamp``,
      ``webhook-signature``), that signature must match too. It covers the id and the timestamp, so
      a captured delivery cannot be replayed later with a new timestamp.
    """
    _check_secret(secret)
    if not verify_webhook_signature(body, _header(headers, "x-service-signature"), secret):
        return False
    service_timestamp = _header(headers, "x-service-timestamp")
    standard_timestamp = _header(headers, "webhook-timestamp")
    if service_timestamp is not None and standard_timestamp is not None and service_timestamp != standard_timestamp:
        return False
    timestamp = standard_timestamp if standard_timestamp is not None else service_timestamp
    if timestamp is None or not _DIGITS.match(timestamp.strip()):
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        return False
    standard_signature = _header(headers, "webhook-signature")
    if standard_signature is None:
        return True
    delivery_id = _header(headers, "webhook-id")
    if delivery_id is None:
        return False
    return _standard_signature_valid(body, delivery_id, timestamp.strip(), standard_signature, secret)


def _standard_signature_valid(body: Body, delivery_id: str, timestamp: str, header: str, secret: str) -> bool:
    """Standard Webhooks: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``, keyed with the
    base64-decoded part of the secret; two, space-separated, during a rotation."""
    try:
        key = base64.b64decode(secret[len("whsec_") :] if secret.startswith("whsec_") else secret, validate=True)
    except (binascii.Error, ValueError):
        return False
    signed = delivery_id.encode("utf-8") + b"." + timestamp.encode("ascii") + b"." + _bytes(body)
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    candidates = header.split()
    if len(candidates) > _MAX_SIGNATURES:
        return False
    valid = False
    for candidate in candidates:
        version, _, encoded = candidate.partition(",")
        if version != "v1":
            continue
        try:
            given = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(given, expected):
            valid = True
    return valid


def _header(headers: Any, name: str) -> Optional[str]:
    """A header's value, looked up without regard to letter case."""
    if headers is None:
        return None
    pairs: Iterable[Tuple[Any, Any]] = headers.items() if hasattr(headers, "items") else headers
    for key, value in pairs:
        if str(key).lower() == name:
            if isinstance(value, (list, tuple)):
                value = ",".join(str(item) for item in value)
            elif isinstance(value, bytes):
                value = value.decode("latin-1")
            return str(value)
    return None


def _bytes(body: Body) -> bytes:
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    raise TypeError("the webhook body must be the raw bytes (or text) as received")


def _check_secret(secret: str) -> None:
    if not isinstance(secret, str) or secret == "":
        raise TypeError("verify_webhook: secret is required (the whsec_… string)")


