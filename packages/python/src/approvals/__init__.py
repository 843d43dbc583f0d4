"""The Python SDK of the Action Approval Service. Standard library only.

    from approvals import Client
    client = Client("https://approvals.example.com", "svc_live_…")
    decision = client.hold(tool_name="send_invoice", arguments={"amount": 120},
                           agent_identity={"id": "billing-bot"})
    if decision.approved:
        send_invoice()
"""

from .canonical_json import canonical_json
from .client import Client, Decision
from .decorator import call_arguments, requires_approval
from .errors import ApprovalsApiError, ApprovalsError, ApprovalsNetworkError, NotApproved, RateLimit
from .evidence import EvidenceVerification, checkpoint_input, entry_hash_input, verify_evidence_export
from .receipts import ReceiptCheck, receipt_action_hash, verify_receipt
from .signed_decisions import (
    SignedDecisionCheck,
    SignedDecisionsReport,
    action_challenge,
    verify_signed_decision,
    verify_signed_decisions,
)
from .webhooks import verify_webhook, verify_webhook_signature

__version__ = "0.1.0"

__all__ = [
    "ApprovalsApiError",
    "ApprovalsError",
    "ApprovalsNetworkError",
    "Client",
    "Decision",
    "EvidenceVerification",
    "NotApproved",
    "RateLimit",
    "ReceiptCheck",
    "SignedDecisionCheck",
    "SignedDecisionsReport",
    "action_challenge",
    "call_arguments",
    "canonical_json",
    "checkpoint_input",
    "entry_hash_input",
    "receipt_action_hash",
    "requires_approval",
    "verify_evidence_export",
    "verify_receipt",
    "verify_signed_decision",
    "verify_signed_decisions",
    "verify_webhook",
    "verify_webhook_signature",
]
