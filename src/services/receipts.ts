/**
 * Receipts (issue 41): an approved or allowed hold carries a compact JWS, signed with the service's
 * Ed25519 key (the one that signs evidence checkpoints: audit-signer.ts), that the system performing
 * the action can check without trusting the agent (packages/sdk/src/receipt.ts says what it holds).
 * A receipt is made from the hold as decided, so reading it twice gives the same text; it expires
 * RECEIPT_LIFETIME_MS after the decision. A hold read from the database gets one only when its
 * evidence says it was approved or allowed (hold-evidence.ts), so a database writer who flips a row
 * gets no receipt signed, and only while its workspace is not frozen (freeze.ts): the kill switch
 * stops what agents could still show to the systems that act.
 */
import { RECEIPT_TYPE, type ReceiptClaims, receiptActionInput } from '../../packages/sdk/src/receipt.ts';
import type { Hold } from '../domain/hold.ts';
import { findChainHead } from '../store/evidence.ts';
import { listHoldDecisions } from '../store/hold-decisions.ts';
import { findWorkspace } from '../store/workspaces.ts';
import { signCompactJws } from './audit-signer.ts';
import type { ServiceContext } from './context.ts';
import { argumentsToRun } from './decision-changes.ts';
import { sha256Hex } from './hashing.ts';
import { checkAllowedHold, checkApprovedHold } from './hold-evidence.ts';

/** How long a receipt is good for after the decision: time to perform the action, not to keep it. */
const RECEIPT_LIFETIME_MS = 15 * 60_000;

/** The `_meta` key of a tools/call under which the proxy sends the receipt upstream. */
export const RECEIPT_META_KEY = 'io.approvals/receipt';

/** What a hold's receipt says was decided; null when it gets none (pending, rejected, expired). */
function decisionOf(hold: Hold): ReceiptClaims['decision'] | null {
  if (hold.status === 'approved') return 'approved';
  if (hold.status === 'auto_allowed') return 'allowed';
  if (hold.status === 'executed' || hold.status === 'failed')
    return hold.verdict === 'approve' ? 'approved' : 'allowed';
  return null;
}

/** Signs the receipt of a hold that was approved (by `approvers`) or allowed. */
async function signReceipt(
  ctx: ServiceContext,
  workspaceSlug: string,
  hold: Hold,
  decision: ReceiptClaims['decision'],
  approvers: string[],
): Promise<string> {
  const decidedAt = decision === 'approved' ? (hold.decidedAt ?? hold.createdAt) : hold.createdAt;
  const claims: ReceiptClaims = {
    iss: ctx.publicUrl,
    sub: hold.id,
    workspace: workspaceSlug,
    environment: hold.environment,
    connection: hold.connection,
    tool_name: hold.toolName,
    action_sha256: sha256Hex(
      receiptActionInput({
        connection: hold.connection,
        tool_name: hold.toolName,
        // The call as approved: with an approver's changes, the changed one.
        arguments: argumentsToRun(hold),
      }),
    ),
    decision,
    approvers,
    iat: Math.floor(decidedAt / 1000),
    exp: Math.floor((decidedAt + RECEIPT_LIFETIME_MS) / 1000),
  };
  return signCompactJws(
    ctx.signer.signingKey,
    { alg: 'EdDSA', kid: ctx.signer.keyId, typ: RECEIPT_TYPE },
    claims,
  );
}

/** The receipt of a hold just allowed by this service (not read back from the database). */
export const allowedReceipt = (ctx: ServiceContext, workspaceSlug: string, hold: Hold) =>
  signReceipt(ctx, workspaceSlug, hold, 'allowed', []);

/**
 * The receipt of a hold as stored, or undefined when it gets none: not approved or allowed, its
 * evidence does not say so, or its workspace is frozen. Approvers are the members who approved, by e-mail.
 */
export async function receiptOf(ctx: ServiceContext, hold: Hold): Promise<string | undefined> {
  const decision = decisionOf(hold);
  if (decision === null) return undefined;
  // Read now, not as the caller's credential found it: a freeze counts from the moment it is made.
  const [workspace, head] = await Promise.all([
    findWorkspace(ctx.db, hold.workspaceId),
    findChainHead(ctx.db, hold.workspaceId),
  ]);
  if (!workspace || workspace.frozenAt !== null || !head) return undefined;
  if (decision === 'allowed') {
    if (!(await checkAllowedHold(ctx.db, hold, head))) return undefined;
    return signReceipt(ctx, workspace.slug, hold, decision, []);
  }
  if (!(await checkApprovedHold(ctx.db, hold, head)).ok) return undefined;
  const approvers = (await listHoldDecisions(ctx.db, hold.id))
    .filter((row) => row.verdict === 'approve' && !row.superseded)
    .map((row) => row.email);
  return signReceipt(ctx, workspace.slug, hold, decision, approvers);
}

/** The `_meta` of an approved call the execution worker sends upstream (its hold checked already). */
export async function approvedCallMeta(ctx: ServiceContext, hold: Hold): Promise<Record<string, string>> {
  const receipt = await receiptOf(ctx, hold);
  return receipt ? { [RECEIPT_META_KEY]: receipt } : {};
}

/** The `_meta` of an allowed call the proxy sends upstream at once. */
export const allowedCallMeta = async (ctx: ServiceContext, workspaceSlug: string, hold: Hold) => ({
  [RECEIPT_META_KEY]: await allowedReceipt(ctx, workspaceSlug, hold),
});
