/**
 * Asking the member at their assistant (docs/mcp.md, "Approval in the client"): a tools/call held
 * under a rule that says `self_approval` is put to the client that made it, as an elicitation form,
 * when the client declared elicitation: on the call's own stream (2025-era sessions), or as an
 * `input_required` round (2026-07-28). Approved there, the call runs and its result answers this
 * very tools/call; rejected or declined, it is denied. No answer (cancelled, an error, no such
 * capability, too long a wait): the held answer as before, and the hold stays for the approvers.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  ProtocolError,
} from '@modelcontextprotocol/server';
import type { FastifyBaseLogger } from 'fastify';
import type { Hold, Verdict } from '../domain/hold.ts';
import { summarizeAction } from '../domain/summary.ts';
import { decideInClient, mayAskInClient } from '../services/client-approval.ts';
import type { ServiceContext } from '../services/context.ts';
import { describeSafely } from '../services/errors.ts';
import { mcpSessionOf } from '../services/mcp-sessions.ts';
import type { CallRelay, ProxyAnswer, ProxyCaller } from '../services/proxy-call.ts';
import { wantsTask } from './tasks.ts';

/** How long the member has to answer; their client's own timeout may end the call sooner. */
const ASK_TIMEOUT_MS = 5 * 60_000;

/** The most of the action the form shows; a longer one is not asked about (nobody approves half of it). */
const ACTION_BUDGET = 4000;

/** The field of the form, and its two answers. */
const DECISION = 'decision';
const APPROVE = 'approve';
const REJECT = 'reject';

/**
 * Whether a client that declared these capabilities takes elicitation forms: `elicitation: {}` (form
 * implied) or with `form` (a client of `url` only takes no form).
 */
function takesForms(capabilities: Record<string, unknown> | null | undefined): boolean {
  const declared = capabilities?.elicitation;
  if (typeof declared !== 'object' || declared === null) return false;
  return Object.keys(declared).length === 0 || 'form' in declared;
}

/** The hold, when its call may be put to its client: shown whole, and its rule lets the member decide. */
async function askable(ctx: ServiceContext, hold: Hold | undefined) {
  if (!hold) return null;
  const action = summarizeAction(hold.toolName, hold.arguments, ACTION_BUDGET);
  return action.complete && (await mayAskInClient(ctx, hold)) ? { hold, action: action.text } : null;
}

/** The member's verdict recorded, and the call's answer (an error leaves it held, `answer`). */
async function decided(
  ctx: ServiceContext,
  caller: ProxyCaller,
  answer: ProxyAnswer & { hold: Hold },
  verdict: Verdict,
  { signal, log }: { signal: AbortSignal; log: Pick<FastifyBaseLogger, 'warn'> },
): Promise<ProxyAnswer> {
  try {
    // The approved call runs within the time an allowed call may take.
    const within = AbortSignal.timeout(caller.server.callTimeoutSeconds * 1000);
    return await decideInClient(ctx, caller, answer.hold, verdict, {
      signal: AbortSignal.any([signal, within]),
      outputSchema: answer.result.structuredContent !== undefined,
    });
  } catch (error) {
    const hold = answer.hold.id;
    log.warn({ hold, ...describeSafely(error) }, 'the decision in the client was not recorded');
    return answer;
  }
}

/** The form: what the call would do, and approve or reject. */
function approvalForm(hold: Hold, serverName: string, action: string) {
  return {
    method: 'elicitation/create' as const,
    params: {
      message:
        `Your assistant wants to run ${action} on ${serverName}. ` +
        `The rule "${hold.ruleName}" lets you approve your own request here; ` +
        `otherwise it waits for the approvers (reference ${hold.id}).`,
      requestedSchema: {
        type: 'object',
        properties: {
          [DECISION]: {
            type: 'string',
            title: 'Decision',
            description: `${APPROVE} runs the call now; ${REJECT} refuses it.`,
            enum: [APPROVE, REJECT],
          },
        },
        required: [DECISION],
      },
    },
  };
}

/** accept with approve, accept with reject or decline, or anything else (no verdict: stays held). */
function verdictOf(answer: Record<string, unknown>): 'approve' | 'reject' | null {
  if (answer.action === 'decline') return 'reject';
  if (answer.action !== 'accept') return null;
  const chosen = (answer.content as Record<string, unknown> | undefined)?.[DECISION];
  return chosen === APPROVE ? 'approve' : chosen === REJECT ? 'reject' : null;
}

/**
 * A 2025-era call's answer after asking its client on the call's stream, when it may be asked (else
 * `answer` as it is). `signal` aborts when the call ends or its client goes away.
 */
export async function askInClient(
  ctx: ServiceContext,
  caller: ProxyCaller,
  answer: ProxyAnswer,
  ask: NonNullable<CallRelay['ask']>,
  options: { signal: AbortSignal; log: Pick<FastifyBaseLogger, 'warn'> },
): Promise<ProxyAnswer> {
  // A call asked as a task is answered with its task at once; its status tells what happens next.
  if (caller.asTask || caller.mcpSession === null) return answer;
  const asking = await askable(ctx, answer.hold);
  if (!asking) return answer;
  const session = await mcpSessionOf(ctx, caller.mcpSession);
  if (!takesForms(session?.clientCapabilities)) return answer;
  const form = approvalForm(asking.hold, caller.server.name, asking.action);
  const timeout = AbortSignal.timeout(ASK_TIMEOUT_MS);
  const replied = await ask(form, AbortSignal.any([options.signal, timeout])).catch(() => null);
  const verdict = replied && verdictOf(replied);
  return verdict ? decided(ctx, caller, { ...answer, hold: asking.hold }, verdict, options) : answer;
}

/** What a 2026-07-28 tools/call brings for its rounds, lifted from its params by the SDK. */
export interface CallRound {
  /** The request's `_meta` envelope: the client's capabilities, among others. */
  envelope: object | undefined;
  inputResponses: Record<string, unknown> | undefined;
  /** The echoed `requestState`: attacker-controlled until verified. */
  requestState: unknown;
}

/** The key of the approval among a round's input requests and responses. */
const APPROVAL_INPUT = 'approval';

/** What the sealed `requestState` holds: the hold asked about, for the call (caller and all) that made it. */
interface AskedState {
  hold: string;
  call: string | null;
}

/** HMAC-sealed under a key derived from the service's secret: the same on every instance. */
const stateCodec = (ctx: ServiceContext) =>
  createRequestStateCodec<AskedState>({
    key: ctx.sealer.derive('mcp: requestState of an approval in the client'),
    ttlSeconds: ASK_TIMEOUT_MS / 1000,
  });

const capabilitiesIn = (envelope: object | undefined) =>
  (envelope as Record<string, Record<string, unknown> | undefined> | undefined)?.[
    CLIENT_CAPABILITIES_META_KEY
  ];

/**
 * A 2026-07-28 call's answer (no session, no stream to ask on): a held call that may be put to its
 * client is answered `input_required`, the form as its input request and the hold sealed in
 * `requestState`. The client's retry (the same call, so the same hold) brings the member's answer
 * and the state back: verified, it decides as on a 2025-era stream. Otherwise `answer` as it is.
 */
export async function askInRounds(
  ctx: ServiceContext,
  caller: ProxyCaller,
  answer: ProxyAnswer,
  round: CallRound,
  options: { signal: AbortSignal; log: Pick<FastifyBaseLogger, 'warn'> },
): Promise<ProxyAnswer> {
  // A client of the tasks extension gets its task, as on a 2025-era session.
  if (wantsTask(false, {}, round.envelope)) return answer;
  const asking = await askable(ctx, answer.hold);
  if (!asking) return answer;
  const { hold } = asking;
  const codec = stateCodec(ctx);
  if (typeof round.requestState === 'string') {
    // Verified without the request's context: the codec binds nothing to it, the payload names the call.
    const state = await codec.verify(round.requestState, undefined as never).catch(() => null);
    if (!state) throw new ProtocolError(-32602, 'Invalid or expired requestState');
    // Sealed for another hold, or another caller's call: not an answer to this one.
    if (state.hold !== hold.id || state.call !== hold.callKey) return answer;
    const reply = round.inputResponses?.[APPROVAL_INPUT];
    const verdict =
      typeof reply === 'object' && reply !== null ? verdictOf(reply as Record<string, unknown>) : null;
    return verdict ? decided(ctx, caller, { ...answer, hold }, verdict, options) : answer;
  }
  if (!takesForms(capabilitiesIn(round.envelope))) return answer;
  const form = approvalForm(hold, caller.server.name, asking.action);
  const requestState = await codec.mint({ hold: hold.id, call: hold.callKey });
  // Not a tool result: the SDK sends an input_required result as the revision says.
  const result = { resultType: 'input_required', inputRequests: { [APPROVAL_INPUT]: form }, requestState };
  return { result: result as unknown as ProxyAnswer['result'], hold };
}
