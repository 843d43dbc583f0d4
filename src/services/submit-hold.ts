/** An agent asks "may I do this?": the rules answer at once with allowed, pending or denied. */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { type Environment, type Hold, SDK_CONNECTION, type SubmitStatus } from '../domain/hold.ts';
import { ruleArguments } from '../domain/deciding-values.ts';
import { FROZEN_RULE, frozenOutcome } from '../domain/freeze.ts';
import { newHoldReference } from '../domain/ids.ts';
import { answersRepeat } from '../domain/repeat-window.ts';
import type { Outcome } from '../domain/policy.ts';
import { type RuleMatch, scopeKey } from '../domain/rules.ts';
import { type Sql, UniqueViolationError } from '../store/db.ts';
import { findHold, findHoldByIdempotencyKey, insertHoldStatement } from '../store/holds.ts';
import { writeWithNext } from '../store/statements.ts';
import { lockForSubmission, type SubmissionState } from '../store/submissions.ts';
import { toolSeenStatement } from '../store/tools.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { invalid, ServiceError } from './errors.ts';
import { evaluateCall, likelyScopes, repeatWindowMinutes } from './evaluate-call.ts';
import type { HoldSubmission } from './hold-submission.ts';
import { followUpStatement, followUpsOf } from './follow-ups.ts';
import { approverNotifications } from './notifications.ts';
import { holdEventStatement } from './webhooks.ts';
import { chainAfter } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
import { keepHoldTrace } from './hold-traces.ts';
import { inSpan } from '../telemetry/tracing.ts';

/** What the use case records: a submission, read from wherever it came, and where it came from. */
export interface HoldRequest {
  connection: string;
  toolName: string;
  arguments: Record<string, unknown>;
  agent: { id: string; label: string | null };
  context: Record<string, unknown>;
  idempotencyKey: string;
  /** On the MCP proxy path: the upstream server, and the key identical calls share. */
  proxy?: { mcpServerId: string; callKey: string };
}

/**
 * Who submits: an API key (bound to an agent identity and its owner, or not), or an OAuth client a
 * member allowed. Decides the agent a bound key's holds carry, and whose own request a hold is.
 */
export type Requester =
  | {
      kind: 'key';
      keyId: string;
      agentId: string | null;
      owner: { id: string; email: string } | null;
    }
  | { kind: 'oauth'; grantId: string; member: { id: string; email: string } };

export interface Submitter {
  workspace: Workspace;
  environment: Environment;
  requester: Requester;
}

/** The field a bound key's submission must agree on; on the MCP proxy, the `X-Service-Agent` header. */
export const BOUND_AGENT_FIELD = 'agent_identity.id';

/**
 * A bound key's holds carry its agent identity: a submission naming another is refused rather than
 * changed, so a caller learns its mistake. A workspace requiring bound keys refuses unbound ones.
 */
function checkRequester(workspace: Workspace, requester: Requester, agentId: string) {
  if (requester.kind !== 'key') return;
  if (requester.agentId === null) {
    if (workspace.keyBinding === 'required')
      throw new ServiceError('key_not_bound', 'this workspace takes holds from bound API keys only');
    return;
  }
  if (agentId !== requester.agentId)
    throw invalid(BOUND_AGENT_FIELD, 'must be the agent identity this API key is bound to');
}

/** The member a hold is requested for: they may not approve it (`own_request`). */
function requestedFor(requester: Requester) {
  const member = requester.kind === 'oauth' ? requester.member : requester.owner;
  if (!member) return null;
  return {
    member,
    // Named in the submission's evidence: the owner, and how the hold came to be theirs.
    evidence: {
      requested_for: { id: member.id, email: member.email, through: requester.kind },
      ...(requester.kind === 'key' ? { bound_key: requester.keyId } : {}),
    },
  };
}

export interface SubmitResult {
  /** False when the idempotency key matched an earlier hold, which is returned unchanged. */
  created: boolean;
  hold: Hold;
  body: { id: string; status: SubmitStatus; status_url: string };
}

const SUBMIT_STATUS = { allow: 'allowed', approval: 'pending', deny: 'denied' } as const;

export const statusUrl = (ctx: ServiceContext, reference: string) => `${ctx.publicUrl}/a/${reference}`;

/** Two submissions are the same action when tool, agent and canonical arguments agree. */
export const actionFingerprint = (s: HoldRequest) =>
  sha256Hex(
    canonicalJson({ connection: s.connection, tool: s.toolName, agent: s.agent.id, arguments: s.arguments }),
  );

function result(ctx: ServiceContext, hold: Hold, created: boolean): SubmitResult {
  return {
    created,
    hold,
    body: { id: hold.id, status: hold.submitStatus, status_url: statusUrl(ctx, hold.id) },
  };
}

function replay(ctx: ServiceContext, existing: Hold, fingerprint: string): SubmitResult {
  // Answering with the first hold would let an agent run a different action under an old approval.
  if (existing.fingerprint !== fingerprint) {
    throw invalid('idempotency_key', 'was already used for a different action; use a new key');
  }
  return result(ctx, existing, false);
}

const startOfMonth = (ms: number) => {
  const date = new Date(ms);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
};

/** Traced as `hold submit`, which names the hold; a held MCP call keeps its trace (hold-traces.ts). */
export function submitHold(ctx: ServiceContext, caller: Submitter, submission: HoldRequest) {
  return inSpan('hold submit', {}, async () => {
    const submitted = await submitUntraced(ctx, caller, submission);
    await keepHoldTrace(ctx, submitted.hold);
    return submitted;
  });
}

async function submitUntraced(
  ctx: ServiceContext,
  caller: Submitter,
  submission: HoldRequest,
): Promise<SubmitResult> {
  const { workspace } = caller;
  checkRequester(workspace, caller.requester, submission.agent.id);
  const owner = requestedFor(caller.requester);
  const fingerprint = actionFingerprint(submission);
  const call = {
    connection: submission.connection,
    toolName: submission.toolName,
    agentId: submission.agent.id,
    arguments: submission.arguments,
  };
  /** The other instances were told of the new hold by its transaction. */
  let told = false;
  try {
    // Batched per workspace: its submissions all wait for its chain lock anyway.
    const submitted = await ctx.db.transaction(
      async (tx) => {
        // Counted from a moment before the lock: a wait for it can only widen the window (more calls
        // count). Taken here, when the transaction starts, not before the wait for its batch.
        const scopes = likelyScopes(ctx, workspace.id, call, ctx.now());
        // One round trip begins, takes the chain lock, which serializes submits per workspace, and reads
        // what the checks below need: they cannot race. The writes go with the commit (writeWithNext).
        const state = await lockForSubmission(tx, ctx.db.dialect, {
          workspaceId: workspace.id,
          idempotencyKey: submission.idempotencyKey,
          callKey: submission.proxy?.callKey ?? null,
          connection: submission.connection,
          toolName: submission.toolName,
          countSince: workspace.plan === 'legacy_free' ? startOfMonth(ctx.now()) : null,
          scopes: scopes.map(({ scope, since }) => ({ scope, since })),
        });
        if (!state) throw new Error('workspace has no evidence chain');
        if (state.replayId)
          return replay(ctx, (await findHold(tx, workspace.id, state.replayId))!, fingerprint);
        // An identical proxy call while its operation is open, or soon after it ended, is that operation again.
        if (state.openId) {
          const open = (await findHold(tx, workspace.id, state.openId))!;
          const window = await repeatWindowMinutes(
            tx,
            ctx,
            workspace.id,
            state.ruleSetVersion,
            open.ruleName,
          );
          // A freeze's denial answers repeats only while the workspace is still frozen.
          const thawed = open.ruleName === FROZEN_RULE && !state.frozen;
          if (answersRepeat(open, window, ctx.now()) && !thawed) return result(ctx, open, false);
        }

        const now = ctx.now();
        // A frozen workspace denies every new hold, whatever its rules say (the kill switch).
        const outcome = state.frozen
          ? frozenOutcome(state.frozen)
          : await decideByRules(tx, ctx, { workspaceId: workspace.id, call, state, scopes, now });
        const hold = newHold(submission, outcome, {
          workspace,
          environment: caller.environment,
          requestedFor: owner?.member.id ?? null,
          fingerprint,
          now,
        });
        told = await writeNewHold(tx, ctx, state, { workspace, submission, hold, outcome, owner, now });
        return result(ctx, hold, true);
      },
      { batch: workspace.id },
    );
    if (submitted.created) {
      ctx.holdEvents.publish(submitted.hold.id, workspace.id, { routine: isRoutine(submitted.hold), told });
    }
    return submitted;
  } catch (error) {
    // Another instance committed the same key between our two reads: answer with its hold.
    if (error instanceof UniqueViolationError) {
      const winner = await findHoldByIdempotencyKey(ctx.db, workspace.id, submission.idempotencyKey);
      if (winner) return replay(ctx, winner, fingerprint);
      // No such hold: the entry conflicted, someone stored one past the head without moving it.
      ctx.chainGuard.recheck(ctx, workspace.id);
    }
    throw error;
  }
}

/** An allowed hold leaves nothing for the workers (no outbox row, nobody to ask). */
const isRoutine = (hold: Hold) => hold.status === 'auto_allowed';

/** What the workspace's rules answer, once the monthly limit (of plans that have one) is checked. */
async function decideByRules(
  tx: Sql,
  ctx: ServiceContext,
  asked: {
    workspaceId: string;
    call: Parameters<typeof evaluateCall>[3];
    state: SubmissionState;
    scopes: ReturnType<typeof likelyScopes>;
    now: number;
  },
): Promise<Outcome> {
  const { state } = asked;
  if (state.holdsSince !== null && state.holdsSince >= ctx.legacyFreeMonthlyHolds) {
    throw new ServiceError('hold_limit_reached', 'monthly hold limit reached');
  }
  const counted = new Map(asked.scopes.map(({ scope }, i) => [scopeKey(scope), state.counts[i]!]));
  const classification = state.tool?.classification ?? null;
  return evaluateCall(tx, ctx, asked.workspaceId, asked.call, classification, asked.now, {
    ruleSetVersion: state.ruleSetVersion,
    counted,
  });
}

/**
 * The new hold's writes, sent with the submission's COMMIT: a tool seen for the first time, the hold,
 * its evidence, the webhook's event, its follow-ups, the approvers' notification jobs and the notice
 * to the other instances (delivered as it commits). Answers whether they were told.
 */
async function writeNewHold(
  tx: Sql,
  ctx: ServiceContext,
  state: SubmissionState,
  made: {
    workspace: Workspace;
    submission: HoldRequest;
    hold: Hold;
    outcome: Outcome;
    owner: ReturnType<typeof requestedFor>;
    now: number;
  },
) {
  const { workspace, submission, hold, outcome, owner, now } = made;
  const { tool } = state;
  const chain = await chainAfter(tx, ctx, workspace.id, state.head);
  const followUps = hold.status === 'pending' ? followUpsOf(outcome, workspace) : null;
  if (!tool) {
    chain.append('tool.registered', {
      connection: submission.connection,
      tool_name: submission.toolName,
      classification: 'new',
    });
  }
  const submittedEntry = chain.append('hold.submitted', submittedEvidence(hold, outcome, owner, followUps));
  // A hold that waits for people reads who they are (one round trip); then all is written with the
  // commit: the hold, its evidence, the webhook's event and the approvers' notification jobs.
  const event = state.webhook ? holdEventStatement(ctx, hold) : null;
  const schedule = followUpStatement(hold, followUps);
  const notice = ctx.holdEvents.toldWith(hold.id, workspace.id, isRoutine(hold));
  await writeWithNext(tx, ctx.db.dialect, [
    ...(tool?.firstSeenAt
      ? []
      : [toolSeenStatement(workspace.id, submission.connection, submission.toolName, now)]),
    // Where its entry is: an approved call is run only as that entry has it (hold-evidence.ts).
    insertHoldStatement(hold, submittedEntry.seq, ruleArgumentsOf(outcome)),
    ...chain.writes(),
    ...(event ? [event] : []),
    ...(schedule ? [schedule] : []),
    ...(await approverNotifications(tx, ctx, workspace, hold)),
    ...(notice ? [notice] : []),
  ]);
  return notice !== null;
}

/** The arguments the deciding rule's conditions looked at, as its facts record them (all of them matched). */
const ruleArgumentsOf = (outcome: Outcome) =>
  ruleArguments({ when: (outcome.facts.conditions as RuleMatch['conditions'] | undefined) ?? [] });

/** The `hold.submitted` entry: the action, who it is requested for, and what the rules decided. */
function submittedEvidence(
  hold: Hold,
  outcome: Outcome,
  owner: ReturnType<typeof requestedFor>,
  followUps: ReturnType<typeof followUpsOf> | null,
) {
  return {
    hold: hold.id,
    environment: hold.environment,
    connection: hold.connection,
    tool_name: hold.toolName,
    agent: { id: hold.agentId, label: hold.agentLabel },
    ...owner?.evidence,
    arguments: hold.arguments,
    context: hold.context,
    status: hold.status,
    rule: outcome.ruleName,
    effect: outcome.effect,
    facts: outcome.facts,
    approvers: outcome.approvers,
    approvals_required: outcome.approvalsRequired,
    expires_at: hold.expiresAt === null ? null : new Date(hold.expiresAt).toISOString(),
    reason: hold.reason,
    // Reminders and escalation steps, as the rule (or the workspace's default) gave them.
    ...followUps,
  };
}

/** A submission as the Core API reads it (`holdSubmissionSchema`), from an SDK. */
export function submitSdkHold(ctx: ServiceContext, caller: Submitter, submission: HoldSubmission) {
  return submitHold(ctx, caller, {
    connection: SDK_CONNECTION,
    toolName: submission.tool_name,
    arguments: submission.arguments ?? {},
    agent: { id: submission.agent_identity.id, label: submission.agent_identity.label ?? null },
    context: submission.context ?? {},
    idempotencyKey: submission.idempotency_key,
  });
}

function newHold(
  submission: HoldRequest,
  outcome: Outcome,
  at: {
    workspace: Workspace;
    environment: Environment;
    requestedFor: string | null;
    fingerprint: string;
    now: number;
  },
): Hold {
  const denied = outcome.effect === 'deny';
  const pending = outcome.effect === 'approval';
  return {
    id: newHoldReference(),
    workspaceId: at.workspace.id,
    environment: at.environment,
    connection: submission.connection,
    toolName: submission.toolName,
    agentId: submission.agent.id,
    agentLabel: submission.agent.label,
    requestedFor: at.requestedFor,
    arguments: submission.arguments,
    changedArguments: null,
    context: submission.context,
    idempotencyKey: submission.idempotencyKey,
    fingerprint: at.fingerprint,
    submitStatus: SUBMIT_STATUS[outcome.effect],
    status: denied ? 'rejected' : pending ? 'pending' : 'auto_allowed',
    ruleName: outcome.ruleName,
    approvers: outcome.approvers,
    approvalsRequired: outcome.approvalsRequired,
    approvalsReceived: 0,
    createdAt: at.now,
    expiresAt: pending ? at.now + outcome.timeoutMinutes * 60_000 : null,
    verdict: denied ? 'reject' : null,
    reason: denied ? outcome.reason : null,
    channel: denied ? 'rule' : null,
    decidedAt: denied ? at.now : null,
    mcpServerId: submission.proxy?.mcpServerId ?? null,
    callKey: submission.proxy?.callKey ?? null,
    // An allowed proxy call goes upstream right after this commit: stored as running, so a process
    // that dies before its result is recorded leaves it for the stale sweep (outcome unknown).
    execution:
      submission.proxy && outcome.effect === 'allow'
        ? { status: 'running', startedAt: at.now, completedAt: null, outcome: null }
        : null,
  };
}
