"""Passkey-signed decisions, checked offline (docs/evidence.md, "Signed decisions").

Where a rule (``signed: true``) or the workspace requires it, an approval carries a WebAuthn
assertion whose challenge is the SHA-256 of the canonical action: the hold, its tool, connection,
agent and arguments, and the verdict. The decision's evidence entry keeps the assertion and a
``passkey.enrolled`` entry keeps the member's public key, so anyone holding the evidence can check,
with the standard library alone, that this member's authenticator approved exactly this action.
The same check as the TypeScript SDK's ``verifySignedDecision`` and ``verifySignedDecisions``.

    from approvals import verify_evidence_export, verify_signed_decisions
    text = open("evidence.jsonl").read()
    assert verify_evidence_export(text, keys=open("audit-key.pem").read()).valid
    entries = [json.loads(line) for line in text.splitlines()[1:] if line.strip()]
    report = verify_signed_decisions(entries)   # report.checked, report.invalid
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from . import ed25519, p256
from .canonical_json import canonical_json

__all__ = [
    "SignedDecisionCheck",
    "SignedDecisionsReport",
    "action_challenge",
    "signed_action_input",
    "verify_signed_decision",
    "verify_signed_decisions",
]

# SHA-256's DigestInfo prefix in an RSASSA-PKCS1-v1_5 signature (RFC 8017, 9.2, note 1).
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


@dataclass(frozen=True)
class SignedDecisionCheck:
    """``valid``, or the ``reason`` it is not: not_signed, malformed, wrong_hold, wrong_member,
    wrong_credential, challenge_mismatch, wrong_type, wrong_origin, wrong_relying_party,
    user_not_verified, unsupported_algorithm, bad_signature."""

    valid: bool
    reason: Optional[str] = None
    member: Optional[Dict[str, str]] = None
    credential_id: Optional[str] = None


@dataclass
class SignedDecisionsReport:
    """How many signed decisions were checked, and each that failed as ``{seq, hold, reason}``
    (``hold_missing`` and ``enrolment_missing`` besides the reasons above)."""

    checked: int = 0
    invalid: List[Dict[str, Any]] = field(default_factory=list)


def signed_action_input(action: Mapping[str, Any]) -> str:
    """The text the challenge hashes: the canonical JSON of hold, connection, tool_name, agent (the
    agent identity's id), arguments and verdict."""
    return canonical_json(
        {
            "hold": action["hold"],
            "connection": action["connection"],
            "tool_name": action["tool_name"],
            "agent": action["agent"],
            "arguments": action["arguments"],
            "verdict": action["verdict"],
        }
    )


def action_challenge(action: Mapping[str, Any]) -> str:
    """The WebAuthn challenge of an action: base64url (unpadded) of the SHA-256 of its canonical JSON."""
    return _b64url(hashlib.sha256(signed_action_input(action).encode("utf-8")).digest())


def verify_signed_decision(
    decision: Mapping[str, Any],
    submitted: Mapping[str, Any],
    enrolment: Mapping[str, Any],
    changed: Optional[Mapping[str, Any]] = None,
) -> SignedDecisionCheck:
    """Checks a signed decision entry against the hold's ``hold.submitted`` entry and the member's
    ``passkey.enrolled`` entry, all three from the same verified export. The action is the call as it
    would run: where an approver changed it, the decision's own ``changed_arguments``, or those of
    ``changed``, the hold's last decision with changes before this one."""
    data = decision.get("data") or {}
    if not data.get("passkey"):
        return SignedDecisionCheck(False, "not_signed")
    if submitted.get("type") != "hold.submitted" or enrolment.get("type") != "passkey.enrolled":
        return SignedDecisionCheck(False, "malformed")
    hold = submitted.get("data") or {}
    earlier = (changed or {}).get("data") or {}
    # ``changed`` is an earlier approval of the same hold that changed the call, or it is not one.
    if changed is not None and (_changes_of(changed) is None or changed.get("seq", 0) >= decision.get("seq", 0)):
        return SignedDecisionCheck(False, "malformed")
    if hold.get("hold") != data.get("hold") or (changed is not None and earlier.get("hold") != data.get("hold")):
        return SignedDecisionCheck(False, "wrong_hold")
    args = _changes_of(decision)
    if args is None:
        args = _changes_of(changed) if changed is not None else None
    if args is None:
        args = hold.get("arguments")
    expected = action_challenge(_action_of({**hold, "arguments": args}, data.get("verdict")))
    return _check_assertion(data, expected, enrolment.get("data") or {})


def verify_signed_decisions(entries: Iterable[Mapping[str, Any]]) -> SignedDecisionsReport:
    """Checks every signed decision among a chain's entries, oldest first (an export that
    ``verify_evidence_export`` found intact). Keeps two challenges and the call's names per hold, not
    the arguments. A decision with changes, and every later decision of its hold, is checked against
    the call as changed."""
    calls: Dict[str, Dict[str, Any]] = {}
    challenges: Dict[str, Tuple[str, str]] = {}
    enrolments: Dict[str, Mapping[str, Any]] = {}
    report = SignedDecisionsReport()

    def remember(call: Mapping[str, Any]) -> None:
        calls[call.get("hold")] = {**call, "arguments": None}
        challenges[call.get("hold")] = (
            action_challenge(_action_of(call, "approve")),
            action_challenge(_action_of(call, "reject")),
        )

    for entry in entries:
        entry_type = str(entry.get("type", ""))
        data = entry.get("data") or {}
        if entry_type == "hold.submitted":
            remember(data)
            continue
        if entry_type == "passkey.enrolled":
            enrolments[data.get("credential_id")] = data
            continue
        known = calls.get(data.get("hold"))
        changes = _changes_of(entry)
        if known is not None and changes is not None:
            remember({**known, "arguments": changes})
        if data.get("passkey") and entry_type.startswith("hold."):
            report.checked += 1
            expected = challenges.get(data.get("hold"))
            enrolment = enrolments.get((data.get("passkey") or {}).get("credential_id"))
            if expected is None:
                check = SignedDecisionCheck(False, "hold_missing")
            elif enrolment is None:
                check = SignedDecisionCheck(False, "enrolment_missing")
            else:
                chosen = expected[1] if data.get("verdict") == "reject" else expected[0]
                check = _check_assertion(data, chosen, enrolment)
            if not check.valid:
                report.invalid.append({"seq": entry.get("seq"), "hold": data.get("hold"), "reason": check.reason})
    return report


_APPROVALS = ("hold.approval_recorded", "hold.approved")


def _changes_of(entry: Mapping[str, Any]) -> Any:
    """An approval's changed call, if it made one (only approvals carry changes); None otherwise."""
    if entry.get("type") not in _APPROVALS:
        return None
    return (entry.get("data") or {}).get("changed_arguments")


def _action_of(submitted: Mapping[str, Any], verdict: Any) -> Dict[str, Any]:
    return {
        "hold": submitted.get("hold"),
        "connection": submitted.get("connection"),
        "tool_name": submitted.get("tool_name"),
        "agent": (submitted.get("agent") or {}).get("id", ""),
        "arguments": submitted.get("arguments"),
        "verdict": "reject" if verdict == "reject" else "approve",
    }


def _check_assertion(
    decision: Mapping[str, Any], expected_challenge: str, enrolment: Mapping[str, Any]
) -> SignedDecisionCheck:
    assertion = decision.get("passkey")
    if not isinstance(assertion, Mapping):
        return SignedDecisionCheck(False, "not_signed")
    if (enrolment.get("member") or {}).get("id") != (decision.get("member") or {}).get("id"):
        return SignedDecisionCheck(False, "wrong_member")
    if enrolment.get("credential_id") != assertion.get("credential_id"):
        return SignedDecisionCheck(False, "wrong_credential")
    try:
        client_data_bytes = _from_b64url(assertion["client_data_json"])
        authenticator_data = _from_b64url(assertion["authenticator_data"])
        signature = _from_b64url(assertion["signature"])
        client_data = json.loads(client_data_bytes.decode("utf-8"))
        if not isinstance(client_data, dict):
            raise ValueError("client data is not an object")
    except (KeyError, TypeError, ValueError, binascii.Error, UnicodeDecodeError):
        return SignedDecisionCheck(False, "malformed")
    if client_data.get("type") != "webauthn.get":
        return SignedDecisionCheck(False, "wrong_type")
    if client_data.get("challenge") != expected_challenge:
        return SignedDecisionCheck(False, "challenge_mismatch")
    rp_id = str(enrolment.get("rp_id"))
    origin = client_data.get("origin")
    if not isinstance(origin, str) or urlsplit(origin).hostname != rp_id:
        return SignedDecisionCheck(False, "wrong_origin")
    # Authenticator data: the SHA-256 of the relying party id (32 bytes), then the flags.
    if len(authenticator_data) < 37:
        return SignedDecisionCheck(False, "malformed")
    if authenticator_data[:32] != hashlib.sha256(rp_id.encode("utf-8")).digest():
        return SignedDecisionCheck(False, "wrong_relying_party")
    # Bit 0: the user was present; bit 2: the authenticator verified them (PIN, biometrics).
    if authenticator_data[32] & 0x01 == 0 or authenticator_data[32] & 0x04 == 0:
        return SignedDecisionCheck(False, "user_not_verified")
    signed = authenticator_data + hashlib.sha256(client_data_bytes).digest()
    try:
        public_key = _from_b64url(str(enrolment.get("public_key")))
    except (ValueError, binascii.Error):
        return SignedDecisionCheck(False, "malformed")
    good = _verify(enrolment.get("algorithm"), public_key, signed, signature)
    if good is None:
        return SignedDecisionCheck(False, "unsupported_algorithm")
    if not good:
        return SignedDecisionCheck(False, "bad_signature")
    member = decision.get("member") or {}
    return SignedDecisionCheck(
        True,
        member={"id": str(member.get("id")), "email": str(member.get("email"))},
        credential_id=str(assertion.get("credential_id")),
    )


def _verify(algorithm: Any, spki: bytes, message: bytes, signature: bytes) -> Optional[bool]:
    """The signature under the SubjectPublicKeyInfo, by COSE algorithm (-7 ES256, -8 EdDSA Ed25519,
    -257 RS256); None for another algorithm. A key or signature that does not parse is invalid."""
    try:
        key = _spki_key(spki)
        if algorithm == -7:
            r, s = _der_sequence_of_integers(signature)
            return p256.verify(key, message, r, s)
        if algorithm == -8:
            return ed25519.verify(key, message, signature)
        if algorithm == -257:
            modulus, exponent = _der_sequence_of_integers(key)
            size = (modulus.bit_length() + 7) // 8
            if len(signature) != size:
                return False
            encoded = pow(int.from_bytes(signature, "big"), exponent, modulus).to_bytes(size, "big")
            digest = _SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
            padding = size - len(digest) - 3
            return padding >= 8 and encoded == b"\x00\x01" + b"\xff" * padding + b"\x00" + digest
    except ValueError:
        return False
    return None


def _der(data: bytes, at: int) -> Tuple[int, bytes, int]:
    """The DER element at `at`: its tag, its content, and where the next one starts."""
    if at + 2 > len(data):
        raise ValueError("DER cut short")
    tag, length = data[at], data[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or at + count > len(data):
            raise ValueError("DER length not supported")
        length = int.from_bytes(data[at : at + count], "big")
        at += count
    if at + length > len(data):
        raise ValueError("DER cut short")
    return tag, data[at : at + length], at + length


def _spki_key(spki: bytes) -> bytes:
    """The key bits of a SubjectPublicKeyInfo: SEQUENCE { algorithm, BIT STRING }."""
    tag, body, _ = _der(spki, 0)
    if tag != 0x30:
        raise ValueError("not a SubjectPublicKeyInfo")
    _, _, at = _der(body, 0)
    tag, bits, _ = _der(body, at)
    if tag != 0x03 or not bits or bits[0] != 0:
        raise ValueError("no key bits")
    return bits[1:]


def _der_sequence_of_integers(data: bytes) -> Tuple[int, int]:
    """The two INTEGERs of a DER SEQUENCE: ECDSA's (r, s), or an RSA key's (modulus, exponent)."""
    tag, body, _ = _der(data, 0)
    if tag != 0x30:
        raise ValueError("not a SEQUENCE")
    values = []
    at = 0
    for _ in range(2):
        tag, value, at = _der(body, at)
        if tag != 0x02:
            raise ValueError("not an INTEGER")
        values.append(int.from_bytes(value, "big"))
    return values[0], values[1]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _from_b64url(text: str) -> bytes:
    if not isinstance(text, str):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
