/** The TypeScript SDK of the Action Approval Service. No dependencies: `fetch` and WebCrypto only. */
export {
  ApprovalsClient,
  type ApprovalsClientOptions,
  type HoldRequest,
  type HoldResult,
  type RequestOptions,
  type WaitOptions,
} from './client.ts';
export {
  ApprovalsApiError,
  ApprovalsError,
  ApprovalsNetworkError,
  type ErrorCode,
  type RateLimit,
} from './errors.ts';
export { verifyWebhookSignature } from './webhooks.ts';
export {
  type AuditKey,
  type EvidenceExport,
  type EvidenceVerification,
  type EvidenceVerifyOptions,
  type TrustedKeys,
  verifyEvidenceExport,
} from './evidence.ts';
export {
  type Checkpoint,
  type EvidenceEntry,
  type EvidenceExportHeader,
  type InvalidReason,
  checkpointInput,
  entryHashInput,
} from './chain.ts';
export { canonicalJson } from './canonical-json.ts';
export {
  actionChallenge,
  type PasskeyAssertion,
  type SignedAction,
  type SignedDecisionCheck,
  type SignedDecisionProblem,
  signedActionInput,
  type SignedDecisionsReport,
  verifySignedDecision,
  verifySignedDecisions,
} from './signed-decision.ts';
export {
  RECEIPT_TYPE,
  type ReceiptAction,
  type ReceiptCheck,
  type ReceiptClaims,
  type ReceiptKeys,
  type ReceiptProblem,
  type ReceiptVerifyOptions,
  receiptActionHash,
  receiptActionInput,
  verifyReceipt,
} from './receipt.ts';
export type {
  CheckpointEvent,
  Decision,
  DecisionChannel,
  HoldCreated,
  HoldRecord,
  HoldStatus,
  HoldSubmission,
  WebhookEvent,
} from './types.ts';
