/** The hold: its states, the answer to a submission, and the record the API shows. */

export type HoldStatus =
  'pending' | 'approved' | 'rejected' | 'expired' | 'auto_allowed' | 'executed' | 'failed';
export type SubmitStatus = 'allowed' | 'pending' | 'denied';
export type Verdict = 'approve' | 'reject';
/**
 * `rule`: decided by a rule at submission; `agent`: withdrawn by its agent (an MCP task cancelled);
 * `mcp_client`: decided by the requesting member in their own MCP client (a rule's `self_approval`).
 */
export type DecisionChannel =
  'inbox' | 'email' | 'sms' | 'slack' | 'teams' | 'widget' | 'mcp_client' | 'rule' | 'agent';
export type Environment = 'live' | 'test';

export const SDK_CONNECTION = 'SDK';

export interface Hold {
  id: string;
  workspaceId: string;
  environment: Environment;
  connection: string;
  toolName: string;
  agentId: string;
  agentLabel: string | null;
  /**
   * The member whose agent asked (a bound key's owner, or the member who allowed the OAuth client):
   * their own request, which they may not approve. Null: nobody's.
   */
  requestedFor: string | null;
  /** As submitted, always. */
  arguments: Record<string, unknown>;
  /** An approver's changes (a rule's `editable`): the arguments the call runs with. Null: as submitted. */
  changedArguments: Record<string, unknown> | null;
  context: Record<string, unknown>;
  idempotencyKey: string;
  /** SHA-256 of the canonical action; a reused idempotency key must match it. */
  fingerprint: string;
  submitStatus: SubmitStatus;
  status: HoldStatus;
  ruleName: string | null;
  /** Who may decide: `role:admin`, `group:<name>` or a member's e-mail. */
  approvers: string[];
  approvalsRequired: number;
  approvalsReceived: number;
  createdAt: number;
  expiresAt: number | null;
  verdict: Verdict | null;
  reason: string | null;
  channel: DecisionChannel | null;
  decidedAt: number | null;
  /** Set on the MCP proxy path: the upstream server the call goes to. */
  mcpServerId: string | null;
  /** Identical proxy calls (server, tool, canonical arguments, session) share this key. */
  callKey: string | null;
  /** What the proxy ran for this hold, once it started. */
  execution: Execution | null;
}

export interface Execution {
  status: 'running' | 'executed' | 'failed';
  startedAt: number;
  completedAt: number | null;
  /** `executed`: the upstream's CallToolResult; `failed`: `{ code, message }`. */
  outcome: unknown;
}

export const isTerminal = (status: HoldStatus) => status !== 'pending';

const iso = (ms: number) => new Date(ms).toISOString();

/** The body of GET /api/v1/holds/:id and of /wait (decisions.md, "The hold record"). */
export function holdRecord(hold: Hold) {
  return {
    id: hold.id,
    status: hold.status,
    created_at: iso(hold.createdAt),
    expires_at: hold.expiresAt === null ? null : iso(hold.expiresAt),
    tool_name: hold.toolName,
    connection: hold.connection,
    agent_identity: { id: hold.agentId, label: hold.agentLabel },
    environment: hold.environment,
    approvals: { required: hold.approvalsRequired, received: hold.approvalsReceived },
    // An approver changed the call (docs/holds.md): `decision.changed_arguments` is what to run.
    arguments_changed: hold.changedArguments !== null,
    decision:
      hold.verdict === null || hold.decidedAt === null || hold.channel === null
        ? null
        : {
            verdict: hold.verdict,
            reason: hold.reason,
            channel: hold.channel,
            decided_at: iso(hold.decidedAt),
            // Only when an approver changed the call: the contract's decision has four fields.
            ...(hold.changedArguments !== null && { changed_arguments: hold.changedArguments }),
          },
    // Absent on the Hold API path; on the proxy path null until the call has run.
    ...(hold.mcpServerId === null ? {} : { execution: executionRecord(hold.execution) }),
  };
}

function executionRecord(execution: Execution | null) {
  if (!execution || execution.status === 'running' || execution.completedAt === null) return null;
  const completed_at = iso(execution.completedAt);
  return execution.status === 'executed'
    ? { status: execution.status, completed_at, result: execution.outcome }
    : { status: execution.status, completed_at, error: execution.outcome };
}

export type HoldRecord = ReturnType<typeof holdRecord>;

/** A pending hold past its deadline expires; expiry is never an approval. */
export function expireHold(hold: Hold): Hold {
  return { ...hold, status: 'expired' };
}

/** The channel of a hold its agent withdrew (the MCP client cancelled its task). */
export const WITHDRAWN_CHANNEL = 'agent';
export const WITHDRAWN_REASON = 'Withdrawn by the agent before a decision: its MCP client cancelled the task';

export const isWithdrawn = (hold: Pick<Hold, 'status' | 'channel'>) =>
  hold.status === 'rejected' && hold.channel === WITHDRAWN_CHANNEL;

/** A pending hold its agent no longer wants: closed as a rejection on the agent's channel. */
export function withdrawHold(hold: Hold, at: number): Hold {
  return {
    ...hold,
    status: 'rejected',
    verdict: 'reject',
    reason: WITHDRAWN_REASON,
    channel: WITHDRAWN_CHANNEL,
    decidedAt: at,
  };
}

export interface MemberDecision {
  verdict: Verdict;
  comment: string | null;
  channel: DecisionChannel;
  at: number;
  /** An approval that changes the arguments (null: back to the submitted ones): the count restarts. */
  changedArguments?: Record<string, unknown> | null;
}

/**
 * One member's decision on a pending hold: any rejection is final; approval after the last one
 * required. An approval with changes is the first approval of the changed call.
 */
export function applyDecision(hold: Hold, decision: MemberDecision): Hold {
  const decided = {
    verdict: decision.verdict,
    reason: decision.comment,
    channel: decision.channel,
    decidedAt: decision.at,
  };
  if (decision.verdict === 'reject') return { ...hold, status: 'rejected', ...decided };
  const edited = decision.changedArguments !== undefined;
  const changedArguments = edited ? decision.changedArguments! : hold.changedArguments;
  const approvalsReceived = (edited ? 0 : hold.approvalsReceived) + 1;
  if (approvalsReceived < hold.approvalsRequired) return { ...hold, approvalsReceived, changedArguments };
  return { ...hold, approvalsReceived, changedArguments, status: 'approved', ...decided };
}

/** Whether a member is among a hold's approvers (`role:admin`, `group:<name>`, or an e-mail). */
export function isApprover(
  approvers: string[],
  member: { email: string; role: string },
  groupsOfMember: string[] = [],
): boolean {
  if (member.role === 'viewer') return false;
  return approvers.some(
    (approver) =>
      approver === `role:${member.role}` ||
      approver.toLowerCase() === member.email.toLowerCase() ||
      (approver.startsWith('group:') && groupsOfMember.includes(approver.slice(6))),
  );
}
