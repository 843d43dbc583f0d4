"""Offline verification of an evidence export (docs/evidence.md).

Recomputes every entry's hash and link and checks the signed checkpoint with a public key you
trust, so an auditor needs nothing but the export, the key and this module. The rules are those of
the service's own check (packages/sdk/src/chain.ts and evidence.ts in the repository).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import ed25519
from .canonical_json import canonical_json
from .errors import ApprovalsError

__all__ = [
    "EVIDENCE_EXPORT_FORMAT",
    "EvidenceVerification",
    "checkpoint_input",
    "entry_hash_input",
    "verify_evidence_export",
]

EVIDENCE_EXPORT_FORMAT = "approvals-evidence/1"
GENESIS_HASH = "0" * 64
_MAX_SAFE_INTEGER = 2**53 - 1
_PEM_BLOCK = re.compile(r"-----BEGIN PUBLIC KEY-----(.*?)-----END PUBLIC KEY-----", re.S)
# An Ed25519 SubjectPublicKeyInfo (RFC 8410) is this DER prefix, then the 32 bytes of the key.
_ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")

#: What you may pass as ``keys``: the JSON of ``{base_url}/.well-known/approvals-audit-key`` (as
#: text or parsed), a PEM text with one or more public keys, a raw 32-byte key, or a list of these.
TrustedKeys = Union[str, bytes, Mapping[str, Any], Sequence[Union[str, bytes, Mapping[str, Any]]]]
#: The export: its text (str or bytes), a path (``pathlib.Path``), or an iterable of lines such as
#: an open file (text or binary).
EvidenceSource = Union[str, bytes, "os.PathLike[str]", Iterable[Union[str, bytes]]]


@dataclass(frozen=True)
class EvidenceVerification:
    #: The chain is intact, every entry is covered by the checkpoint, and the checkpoint is signed
    #: by one of the keys (or no keys were given).
    valid: bool
    #: The workspace the export is of (``orgId``).
    org_id: str
    #: Entries checked and found good.
    checked: int
    #: The last entry found good: ``{"seq", "hash"}``, or None.
    head: Optional[Dict[str, Any]]
    #: The first problem, ``{"seq", "reason"}``; checking stops there. None when all is good.
    #: Reasons: hash_mismatch, broken_link, sequence_gap, checkpoint_missing, checkpoint_invalid,
    #: truncated, rewritten.
    first_invalid: Optional[Dict[str, Any]]
    #: The signed chain head the export was made at.
    checkpoint: Optional[Dict[str, Any]]
    #: ``valid``, ``invalid``, or ``unchecked`` when no keys were given.
    signature: str


def entry_hash_input(entry: Mapping[str, Any]) -> str:
    """The exact text an entry's ``hash`` is the SHA-256 of."""
    return canonical_json({key: entry[key] for key in ("seq", "prev_hash", "orgId", "type", "occurred_at", "data")})


def checkpoint_input(org_id: str, checkpoint: Mapping[str, Any]) -> str:
    """The exact text a checkpoint's Ed25519 signature covers."""
    return canonical_json(
        {
            "orgId": org_id,
            "seq": checkpoint["seq"],
            "hash": checkpoint["hash"],
            "signed_at": checkpoint["signed_at"],
            "key_id": checkpoint["key_id"],
        }
    )


def verify_evidence_export(
    source: EvidenceSource,
    keys: Optional[TrustedKeys] = None,
    checkpoint: Optional[Mapping[str, Any]] = None,
) -> EvidenceVerification:
    """Verifies an evidence export (JSON Lines: a header, then one entry per line, oldest first),
    as made by ``approvals evidence export`` or the app's download, reading it line by line.

    ``keys``: the public keys you trust to sign checkpoints, taken from the service's operator or
    the service itself, never from whoever handed you the export. Without them no signature is
    checked (``signature == "unchecked"``).

    ``checkpoint``: one you kept from earlier (``GET /api/v1/audit/checkpoints``, an
    ``evidence.checkpoint`` webhook event, an earlier export's header). The export must still hold
    its ``seq`` with the same hash, else it was rewritten since (``rewritten``).

    Raises ``ApprovalsError`` when the input is not an export, or a key given is not an Ed25519
    public key.
    """
    lines = _lines_of(source)
    first = next(lines, None)
    header = _parse_line(first, 1) if first is not None else None
    if not _is_header(header):
        raise ApprovalsError("Not an evidence export: line 1 is not a %s header" % EVIDENCE_EXPORT_FORMAT)
    assert isinstance(header, dict)
    org_id: str = header["orgId"]
    head_checkpoint: Optional[Dict[str, Any]] = header["checkpoint"]
    trusted = _import_keys(keys) if keys is not None else None
    if checkpoint is not None:
        if not _is_checkpoint(checkpoint):
            raise ApprovalsError("The checkpoint given is not a checkpoint (seq, hash, signed_at, key_id, signature)")
        if trusted is not None and not _signed_by_one_of(trusted, org_id, checkpoint):
            raise ApprovalsError("The checkpoint given is not signed by any of the keys given")
    pins: List[Tuple[int, str, Optional[str]]] = []
    if head_checkpoint:
        pins.append((head_checkpoint["seq"], head_checkpoint["hash"], None))
    if checkpoint is not None:
        pins.append((checkpoint["seq"], checkpoint["hash"], "rewritten"))
    walk = _ChainWalk(pins)
    line_number = 1
    for line in lines:
        line_number += 1
        if line.strip() == "":
            continue
        entry = _parse_line(line, line_number)
        if not _is_entry(entry):
            raise ApprovalsError("Not an evidence export: line %d is not an entry" % line_number)
        # An entry of another workspace does not belong here, whatever its hash says.
        recomputed = _sha256_hex(entry_hash_input(entry)) if entry["orgId"] == org_id else ""
        if not walk.push(entry, recomputed):
            break
    # A checkpoint kept from past the export's last entry: the chain exported was cut off since.
    last_seq = walk.head["seq"] if walk.head else 0
    if checkpoint is not None and checkpoint["seq"] > last_seq:
        walk.fail(last_seq + 1, "truncated")
    walk.finish()
    has_entries = walk.checked > 0 or walk.first_invalid is not None
    # Every entry must be vouched for by the export's checkpoint: entries past it were added later.
    walk.require_coverage(head_checkpoint["seq"] if head_checkpoint else 0)
    signature = "unchecked"
    if trusted is not None and head_checkpoint:
        signature = "valid" if _signed_by_one_of(trusted, org_id, head_checkpoint) else "invalid"
        if signature == "invalid":
            walk.fail(head_checkpoint["seq"], "checkpoint_invalid")
    elif trusted is not None:
        signature = "invalid" if has_entries else "valid"
    return EvidenceVerification(
        valid=walk.first_invalid is None,
        org_id=org_id,
        checked=walk.checked,
        head=walk.head,
        first_invalid=walk.first_invalid,
        checkpoint=head_checkpoint,
        signature=signature,
    )


class _ChainWalk:
    """Entries in order from seq 1; each pin fixes the hash at its seq (a signed checkpoint)."""

    def __init__(self, pins: List[Tuple[int, str, Optional[str]]]) -> None:
        self.pins = pins
        self.checked = 0
        self.head: Optional[Dict[str, Any]] = None
        self.first_invalid: Optional[Dict[str, Any]] = None

    def push(self, entry: Mapping[str, Any], recomputed: str) -> bool:
        if self.first_invalid:
            return False
        expected_seq = (self.head["seq"] if self.head else 0) + 1
        if entry["seq"] != expected_seq:
            return self.fail(expected_seq, "sequence_gap")
        if entry["prev_hash"] != (self.head["hash"] if self.head else GENESIS_HASH):
            return self.fail(entry["seq"], "broken_link")
        if recomputed != entry["hash"]:
            return self.fail(entry["seq"], "hash_mismatch")
        for seq, pinned_hash, reason in self.pins:
            if seq == entry["seq"] and pinned_hash != recomputed:
                return self.fail(seq, reason or "checkpoint_invalid")
        self.checked += 1
        self.head = {"seq": entry["seq"], "hash": recomputed}
        return True

    def finish(self) -> None:
        """After the last entry: a pinned entry that is not there was cut off."""
        last_seq = self.head["seq"] if self.head else 0
        cut_off = [pin for pin in self.pins if pin[0] > last_seq]
        if self.first_invalid or not cut_off:
            return
        self.fail(last_seq + 1, "rewritten" if any(pin[2] for pin in cut_off) else "truncated")

    def require_coverage(self, covered_seq: int) -> None:
        last_seq = self.head["seq"] if self.head else 0
        if not self.first_invalid and last_seq > covered_seq:
            self.fail(covered_seq + 1, "checkpoint_missing")

    def fail(self, seq: int, reason: str) -> bool:
        if self.first_invalid is None:
            self.first_invalid = {"seq": seq, "reason": reason}
        return False


def _import_keys(trusted: TrustedKeys) -> List[Tuple[Optional[str], bytes]]:
    """(key_id or None, 32-byte public key) for every key given."""
    if isinstance(trusted, (str, bytes, bytearray, Mapping)):
        items: Sequence[Any] = [trusted]
    else:
        items = list(trusted)
    imported: List[Tuple[Optional[str], bytes]] = []
    for item in items:
        if isinstance(item, (bytes, bytearray)) and len(item) == 32:
            imported.append((None, bytes(item)))
            continue
        if isinstance(item, (bytes, bytearray)):
            item = bytes(item).decode("utf-8", "replace")
        if isinstance(item, str) and item.lstrip().startswith("{"):
            try:
                item = json.loads(item)
            except ValueError:
                raise ApprovalsError("A key given is neither a published key nor a PEM public key") from None
        if isinstance(item, Mapping):
            published = item.get("keys")
            if isinstance(published, list):
                imported.extend(_import_keys(published))
            else:
                imported.append(_published_key(item))
            continue
        if not isinstance(item, str):
            raise ApprovalsError("A key given is neither a published key nor a PEM public key")
        blocks = _PEM_BLOCK.findall(item)
        if not blocks:
            raise ApprovalsError("A key given is neither a published key nor a PEM public key")
        for block in blocks:
            try:
                der = base64.b64decode("".join(block.split()), validate=True)
            except (binascii.Error, ValueError):
                raise ApprovalsError("A PEM public key given is not base64") from None
            imported.append((None, _spki_key(der)))
    return imported


def _published_key(item: Mapping[str, Any]) -> Tuple[Optional[str], bytes]:
    """One item of /.well-known/approvals-audit-key: ``{key_id, jwk: {kty, crv, x}}``."""
    key_id = item.get("key_id")
    jwk = item.get("jwk")
    if isinstance(jwk, Mapping):
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(jwk.get("x"), str):
            raise ApprovalsError("A key given is not an Ed25519 public key")
        x = jwk["x"]
        try:
            raw = base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 32:
            raise ApprovalsError("A key given is not an Ed25519 public key")
        return (key_id if isinstance(key_id, str) else None, raw)
    pem = item.get("public_key_pem")
    if isinstance(pem, str):
        return (key_id if isinstance(key_id, str) else None, _import_keys(pem)[0][1])
    raise ApprovalsError("A key given is neither a published key nor a PEM public key")


def _spki_key(der: bytes) -> bytes:
    if len(der) != len(_ED25519_SPKI_PREFIX) + 32 or not der.startswith(_ED25519_SPKI_PREFIX):
        raise ApprovalsError("A key given is not an Ed25519 public key")
    return der[len(_ED25519_SPKI_PREFIX) :]


def _signed_by_one_of(keys: List[Tuple[Optional[str], bytes]], org_id: str, checkpoint: Mapping[str, Any]) -> bool:
    """Whether one of the keys (the one the checkpoint names, where keys have ids) signed it."""
    try:
        signature = base64.b64decode(checkpoint["signature"], validate=True)
    except (binascii.Error, ValueError):
        return False
    signed = checkpoint_input(org_id, checkpoint).encode("utf-8")
    for key_id, key in keys:
        if key_id is not None and key_id != checkpoint["key_id"]:
            continue
        if ed25519.verify(key, signed, signature):
            return True
    return False


def _lines_of(source: EvidenceSource) -> Iterator[str]:
    if isinstance(source, (bytes, bytearray)):
        source = bytes(source).decode("utf-8")
    if isinstance(source, str):
        yield from source.split("\n")
        return
    if isinstance(source, os.PathLike):
        with open(source, "r", encoding="utf-8", newline="") as file:
            yield from _lines_of(file)
        return
    # Chunks or lines (an open file yields lines with their "\n"); split on "\n" only, as the service.
    rest = ""
    for chunk in source:
        rest += chunk.decode("utf-8") if isinstance(chunk, (bytes, bytearray)) else chunk
        parts = rest.split("\n")
        rest = parts.pop()
        yield from parts
    yield rest


def _reject_constant(name: str) -> Any:
    raise ValueError("not JSON: " + name)


def _parse_line(line: str, line_number: int) -> Any:
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except ValueError:
        raise ApprovalsError("Not an evidence export: line %d is not JSON" % line_number) from None


def _safe_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_SAFE_INTEGER


def _is_checkpoint(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and _safe_integer(value.get("seq"))
        and all(isinstance(value.get(name), str) for name in ("hash", "signed_at", "key_id", "signature"))
    )


def _is_header(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("format") != EVIDENCE_EXPORT_FORMAT:
        return False
    if not isinstance(value.get("orgId"), str) or "checkpoint" not in value:
        return False
    return value["checkpoint"] is None or _is_checkpoint(value["checkpoint"])


def _is_entry(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and _safe_integer(value.get("seq"))
        and all(isinstance(value.get(name), str) for name in ("prev_hash", "orgId", "type", "occurred_at", "hash"))
        and "data" in value
    )


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
