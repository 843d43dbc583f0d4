/**
 * Receipts. The service signs each approved or allowed hold with a compact JWS (EdDSA, Ed25519;
 * RFC 7515 and 8037) whose payload names the hold, its workspace and the SHA-256 of the canonical
 * action. The system that performs the action (a payment API, an MCP server behind the proxy) checks
 * the receipt against the service's published keys and against the action it was asked to perform,
 * so it need not trust the agent: other arguments, another workspace's hold, an expired receipt or a
 * forged one are refused. WebCrypto only, no JOSE library (the SDK has no dependencies).
 */
import { canonicalJson } from './canonical-json.ts';
import { sha256Hex } from './evidence.ts';
import { fromBase64url } from './signed-decision.ts';
import { subtle } from './web-crypto.ts';

/** The JWS `typ` of a receipt. */
export const RECEIPT_TYPE = 'approvals-receipt+jwt';

/** What was approved: as the hold was submitted. */
export interface ReceiptAction {
  /** `SDK` (the default) for holds of the Hold API; on the MCP proxy, the MCP server's name. */
  connection?: string;
  tool_name: string;
  arguments?: Record<string, unknown>;
}

/** A receipt's payload. */
export interface ReceiptClaims {
  /** The service's public URL. */
  iss: string;
  /** The hold's reference: one action, so a performer that remembers it runs each receipt once. */
  sub: string;
  /** The workspace's slug. */
  workspace: string;
  environment: 'live' | 'test';
  connection: string;
  tool_name: string;
  /** Hex SHA-256 of the RFC 8785 canonical JSON of `{ connection, tool_name, arguments }`. */
  action_sha256: string;
  /** `approved` by people, or `allowed` by the workspace's rules without asking anyone. */
  decision: 'approved' | 'allowed';
  /** The e-mail addresses of the members who approved; empty for `allowed`. */
  approvers: string[];
  /** Seconds since the epoch: the decision. */
  iat: number;
  /** Seconds since the epoch: the receipt is refused from then on. */
  exp: number;
}

/** The service's receipt keys (GET /.well-known/approvals-receipt-keys). */
export interface ReceiptKeys {
  keys: { kty: string; crv?: string; x?: string; kid?: string }[];
}

export interface ReceiptVerifyOptions {
  /** The published keys (fetch them from the service once and keep them). */
  jwks: ReceiptKeys;
  /** The slug of the workspace whose approvals count here. */
  workspace: string;
  /** When given, only receipts of holds submitted in this environment count. */
  environment?: 'live' | 'test';
  /** Milliseconds since the epoch; default now. */
  now?: number;
}

export type ReceiptProblem =
  | 'malformed'
  | 'unsupported_algorithm'
  | 'unknown_key'
  | 'bad_signature'
  | 'expired'
  | 'wrong_workspace'
  | 'wrong_environment'
  | 'action_mismatch';

export type ReceiptCheck = { valid: true; claims: ReceiptClaims } | { valid: false; reason: ReceiptProblem };

/** The text whose SHA-256 a receipt's `action_sha256` is. */
export const receiptActionInput = (action: ReceiptAction) =>
  canonicalJson({
    connection: action.connection ?? 'SDK',
    tool_name: action.tool_name,
    arguments: action.arguments ?? {},
  });

/** The hex SHA-256 of the canonical action, as a receipt names it. */
export const receiptActionHash = (action: ReceiptAction) => sha256Hex(receiptActionInput(action));

/**
 * Checks a receipt: a known key signed it (EdDSA), it has not expired, it is of the workspace (and
 * environment) given, and its action is this one (connection, tool and canonical arguments).
 */
export async function verifyReceipt(
  receipt: string,
  action: ReceiptAction,
  options: ReceiptVerifyOptions,
): Promise<ReceiptCheck> {
  const fail = (reason: ReceiptProblem): ReceiptCheck => ({ valid: false, reason });
  const parts = typeof receipt === 'string' ? receipt.split('.') : [];
  if (parts.length !== 3) return fail('malformed');
  let header: { alg?: unknown; kid?: unknown; typ?: unknown; crit?: unknown };
  let claims: ReceiptClaims;
  let signature: Uint8Array;
  try {
    header = JSON.parse(new TextDecoder().decode(fromBase64url(parts[0]!)));
    claims = JSON.parse(new TextDecoder().decode(fromBase64url(parts[1]!)));
    signature = fromBase64url(parts[2]!);
  } catch {
    return fail('malformed');
  }
  if (header.typ !== RECEIPT_TYPE || header.crit !== undefined) return fail('malformed');
  if (header.alg !== 'EdDSA') return fail('unsupported_algorithm');
  const jwk = options.jwks.keys.find((key) => key.kid === header.kid && key.kty === 'OKP');
  if (!jwk || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return fail('unknown_key');
  let good: boolean;
  try {
    const key = await subtle().importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, 'Ed25519', false, [
      'verify',
    ]);
    const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
    good = await subtle().verify('Ed25519', key, new Uint8Array(signature), signed);
  } catch {
    return fail('unknown_key');
  }
  if (!good) return fail('bad_signature');
  if (typeof claims.exp !== 'number' || (options.now ?? Date.now()) >= claims.exp * 1000)
    return fail('expired');
  if (claims.workspace !== options.workspace) return fail('wrong_workspace');
  if (options.environment !== undefined && claims.environment !== options.environment)
    return fail('wrong_environment');
  if (claims.action_sha256 !== (await receiptActionHash(action))) return fail('action_mismatch');
  return { valid: true, claims };
}
