"""Receipts: checking that an action was approved, in the system that performs it (docs/holds.md).

The service signs each approved or allowed hold with a compact JWS (EdDSA, Ed25519; RFC 7515 and
8037) whose payload names the hold (``sub``), its workspace, its environment, the SHA-256 of the
canonical action (``action_sha256``), ``decision``, ``approvers``, ``iat`` and ``exp``. A payment API
(or an MCP server behind the proxy) checks it against the keys the service publishes at
``/.well-known/approvals-receipt-keys`` and against the action it was asked to perform, so it need not
trust the agent. Standard library only: the signature is checked with the pure Ed25519 of ``ed25519``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from . import ed25519
from .canonical_json import canonical_json
from .signed_decisions import _from_b64url

__all__ = ["RECEIPT_TYPE", "ReceiptCheck", "receipt_action_hash", "verify_receipt"]

#: The JWS ``typ`` of a receipt.
RECEIPT_TYPE = "approvals-receipt+jwt"
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class ReceiptCheck:
    """``valid`` with the receipt's ``claims``, or the ``reason`` it is not: malformed,
    unsupported_algorithm, unknown_key, bad_signature, expired, wrong_workspace, wrong_environment,
    action_mismatch."""

    valid: bool
    reason: Optional[str] = None
    claims: Optional[Dict[str, Any]] = None


def receipt_action_hash(tool_name: str, arguments: Optional[Mapping[str, Any]] = None, connection: str = "SDK") -> str:
    """The hex SHA-256 of the canonical action, as a receipt's ``action_sha256`` names it:
    ``{connection, tool_name, arguments}`` in RFC 8785 canonical JSON. ``connection`` is ``SDK`` for
    holds of the Hold API, else the MCP server's name."""
    action = {"connection": connection, "tool_name": tool_name, "arguments": dict(arguments or {})}
    return hashlib.sha256(canonical_json(action).encode("utf-8")).hexdigest()


def verify_receipt(
    receipt: str,
    tool_name: str,
    arguments: Optional[Mapping[str, Any]] = None,
    *,
    jwks: Mapping[str, Any],
    workspace: str,
    connection: str = "SDK",
    environment: Optional[str] = None,
    now: Optional[float] = None,
) -> ReceiptCheck:
    """Checks a receipt: a key of ``jwks`` (the service's published keys) signed it, it has not
    expired at ``now`` (unix seconds; default this clock), it is of ``workspace`` (its slug) and, when
    given, of ``environment`` (``live`` or ``test``), and its action is this one: ``connection``,
    ``tool_name`` and ``arguments`` (in any key order). Never raises for a bad receipt."""
    parts = receipt.split(".") if isinstance(receipt, str) else []
    if len(parts) != 3 or not all(_BASE64URL.match(part) for part in parts):
        return ReceiptCheck(False, "malformed")
    try:
        header = json.loads(_from_b64url(parts[0]).decode("utf-8"))
        claims = json.loads(_from_b64url(parts[1]).decode("utf-8"))
        signature = _from_b64url(parts[2])
    except ValueError:
        return ReceiptCheck(False, "malformed")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return ReceiptCheck(False, "malformed")
    if header.get("typ") != RECEIPT_TYPE or "crit" in header:
        return ReceiptCheck(False, "malformed")
    if header.get("alg") != "EdDSA":
        return ReceiptCheck(False, "unsupported_algorithm")
    key = _public_key(jwks, header.get("kid"))
    if key is None:
        return ReceiptCheck(False, "unknown_key")
    if not ed25519.verify(key, ("%s.%s" % (parts[0], parts[1])).encode("ascii"), signature):
        return ReceiptCheck(False, "bad_signature")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or isinstance(exp, bool) or (time.time() if now is None else now) >= exp:
        return ReceiptCheck(False, "expired")
    if claims.get("workspace") != workspace:
        return ReceiptCheck(False, "wrong_workspace")
    if environment is not None and claims.get("environment") != environment:
        return ReceiptCheck(False, "wrong_environment")
    if claims.get("action_sha256") != receipt_action_hash(tool_name, arguments, connection):
        return ReceiptCheck(False, "action_mismatch")
    return ReceiptCheck(True, claims=claims)


def _public_key(jwks: Mapping[str, Any], kid: Any) -> Optional[bytes]:
    """The 32 bytes of the Ed25519 key with this ``kid`` in a JWK Set, or None."""
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    for jwk in keys if isinstance(keys, list) else []:
        if not isinstance(jwk, Mapping) or jwk.get("kid") != kid or kid is None:
            continue
        x = jwk.get("x")
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(x, str) or not _BASE64URL.match(x):
            return None
        raw = _from_b64url(x)
        return raw if len(raw) == 32 else None
    return None
