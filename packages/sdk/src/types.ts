/** The shapes of the Core API (interface.md and decisions.md), as the SDK sends and receives them. */

/** The body of POST /api/v1/holds. */
export interface HoldSubmission {
  /** Business name of the action: 1–200 characters of `A-Z a-z 0-9 _ . : / -`. */
  tool_name: string;
  /** Parameters of the action; shown to the approver, kept in evidence, readable by rules. */
  arguments?: Record<string, unknown>;
  /** Who acts. */
  agent_identity: { id: string; label?: string };
  /** Extra information for the approver, such as a ticket number. */
  context?: Record<string, unknown>;
  /** Unique per logical action (1–255 characters). A retry with the same key returns the same hold. */
  idempotency_key: string;
}

/** The answer of POST /api/v1/holds. */
export interface HoldCreated {
  id: string;
  status: 'allowed' | 'pending' | 'denied';
  status_url: string;
  /** `allowed` only: the signed receipt (`verifyReceipt`). */
  receipt?: string;
}

/** A stored status (GET /api/v1/holds/:id). `executed` and `failed` occur on the MCP proxy path only. */
export type HoldStatus =
  'pending' | 'auto_allowed' | 'approved' | 'rejected' | 'expired' | 'executed' | 'failed';

/** `mcp_client`: decided by the member it was requested for, in their own MCP client (`self_approval`). */
export type DecisionChannel =
  'inbox' | 'email' | 'sms' | 'slack' | 'teams' | 'widget' | 'mcp_client' | 'rule' | 'agent';

export interface Decision {
  verdict: 'approve' | 'reject';
  /** A rule's denial reason, or the approver's comment; null when none was given. */
  reason: string | null;
  channel: DecisionChannel;
  decided_at: string;
  /**
   * Approved with changes (the rule's `editable`): the arguments to run, whole. Null (or absent, from
   * a service before it): run them as submitted.
   */
  changed_arguments?: Record<string, unknown> | null;
}

/** The answer of GET /api/v1/holds/:id and of POST /api/v1/holds/:id/wait. */
export interface HoldRecord {
  id: string;
  status: HoldStatus;
  created_at: string;
  /** Null when the hold never waited for a human. */
  expires_at: string | null;
  tool_name: string;
  /** `SDK` for the Hold API, else the MCP server's name. */
  connection: string;
  agent_identity: { id: string; label: string | null };
  environment: 'live' | 'test';
  approvals: { required: number; received: number };
  /** An approver changed the arguments: run `decision.changed_arguments`. */
  arguments_changed?: boolean;
  decision: Decision | null;
  /** Approved or allowed holds (and their executions): the signed receipt (`verifyReceipt`). */
  receipt?: string;
  /** Present on the MCP proxy path only. */
  execution?: {
    status: 'executed' | 'failed';
    completed_at: string;
    result?: unknown;
    error?: { code: number; message: string };
  } | null;
}

/** The body of a webhook delivery (decisions.md, Webhooks). */
/** A hold's outcome; for `evidence.checkpoint` see `CheckpointEvent`. */
export interface WebhookEvent {
  event: 'hold.approved' | 'hold.rejected' | 'hold.expired';
  created_at: string;
  /** The hold reference: the key for idempotent handling. */
  id: string;
  data: {
    status: HoldStatus;
    tool_name: string;
    summary: string;
    agent: { id: string };
    connection: string;
    decided_at: string | null;
    decision: {
      verdict: 'approve' | 'reject';
      reason: string | null;
      channel: DecisionChannel;
      /** Approved with changes (a rule's `editable`): the arguments to run, whole. */
      changed_arguments?: Record<string, unknown>;
    } | null;
    /** hold.expired only. */
    expired_at?: string;
  };
}

/**
 * `evidence.checkpoint`: a signed head of the workspace's evidence chain, sent at most once a minute
 * when the chain moved. Keep `data`: `verifyEvidenceExport(file, { keys, checkpoint: data })` later
 * proves the chain still holds it.
 */
export interface CheckpointEvent {
  event: 'evidence.checkpoint';
  created_at: string;
  /** `checkpoint:<seq>`: the key for idempotent handling. */
  id: string;
  data: { orgId: string; seq: number; hash: string; signed_at: string; key_id: string; signature: string };
}
