/**
 * The OpenAI Agents SDK adapter (packages/openai-agents) against the real service, on each storage
 * backend: a real `Agent` and `Runner` whose model is a scripted stand-in on the SDK's `Model`
 * interface (no network), with tools gated by `needsApproval` and answered by holds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Agent,
  type AgentInputItem,
  type AgentOutputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  Runner,
  RunState,
  setTracingDisabled,
  type StreamEvent,
  tool,
  Usage,
} from '@openai/agents';
import { z } from 'zod';
import { type HeldCall, runWithApprovals } from '../packages/openai-agents/src/index.ts';
import { ApprovalsClient } from '../packages/sdk/src/index.ts';
import { findHold } from '../src/store/holds.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { SDK_POLICY } from './support/sdk-policy.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { settles } from './support/wait.ts';

// Nothing may leave the machine: no traces to OpenAI, no model calls, only the local service.
setTracingDisabled(true);
const offMachine: string[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
    offMachine.push(url.href);
    return Promise.reject(new Error(`the test reached for the network: ${url.href}`));
  }
  return realFetch(input, init);
};

const AGENT_IDENTITY = { id: 'billing-bot', label: 'Billing bot' };

interface ScriptedCall {
  name: string;
  callId: string;
  arguments: Record<string, unknown>;
}

/**
 * The model: turn 1 makes the scripted tool calls; once every call's output (or rejection) is in the
 * input, it answers with what it saw, so the test reads what the agent got.
 */
class ScriptedModel implements Model {
  requests = 0;
  readonly calls: ScriptedCall[];
  constructor(calls: ScriptedCall[]) {
    this.calls = calls;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests += 1;
    const items: AgentInputItem[] = typeof request.input === 'string' ? [] : request.input;
    const seen = this.calls.map((call) => {
      const result = items.find(
        (item) => item.type === 'function_call_result' && item.callId === call.callId,
      );
      return result?.type === 'function_call_result' ? textOf(result.output) : undefined;
    });
    const output: AgentOutputItem[] = seen.every((text) => text !== undefined)
      ? [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: `The tool said: ${seen.join(' | ')}` }],
          },
        ]
      : this.calls.map((call) => ({
          type: 'function_call',
          callId: call.callId,
          name: call.name,
          arguments: JSON.stringify(call.arguments),
          status: 'completed',
        }));
    return { usage: new Usage(), output };
  }

  getStreamedResponse(): AsyncIterable<StreamEvent> {
    throw new Error('the adapter runs without streaming');
  }
}

const textOf = (output: unknown): string =>
  typeof output === 'string'
    ? output
    : Array.isArray(output)
      ? output.map(textOf).join('')
      : typeof output === 'object' && output !== null && 'text' in output
        ? String(output.text)
        : JSON.stringify(output);

let sequence = 0;

const newCallId = () => `call_${++sequence}_${process.pid}`;

/** An agent with the policy's three tools, all gated, whose model calls `name` with `args` once. */
function billingAgent(name: string, args: Record<string, unknown>, callId = newCallId()) {
  return { ...agentMaking([{ name, arguments: args, callId }]), callId };
}

/** An agent with the policy's three tools, all gated, whose model makes `calls` in its first turn. */
function agentMaking(calls: ScriptedCall[]) {
  const executed: string[] = [];
  const model = new ScriptedModel(calls);
  const agent = new Agent({
    name: 'Billing assistant',
    instructions: 'Help with billing.',
    model,
    tools: [
      tool({
        name: 'read_balance',
        description: "A customer's balance",
        parameters: z.object({ customer: z.string() }),
        needsApproval: true,
        execute: ({ customer }) => {
          executed.push('read_balance');
          return `${customer} owes 42 EUR`;
        },
      }),
      tool({
        name: 'send_invoice',
        description: 'Sends an invoice',
        parameters: z.object({ customer: z.string(), amount: z.number() }),
        needsApproval: true,
        execute: ({ customer, amount }) => {
          executed.push('send_invoice');
          return `Invoice of ${amount} EUR sent to ${customer}`;
        },
      }),
      tool({
        name: 'delete_account',
        description: "Closes a customer's account",
        parameters: z.object({ customer: z.string() }),
        needsApproval: true,
        execute: ({ customer }) => {
          executed.push('delete_account');
          return `${customer} deleted`;
        },
      }),
    ],
  });
  return { agent, model, executed };
}

/** A promise of the first hold `onHold` reports, and the callback that reports it. */
function firstHold() {
  let report!: (hold: HeldCall) => void;
  const reported = new Promise<HeldCall>((resolve) => (report = resolve));
  return { reported, onHold: (hold: HeldCall) => report(hold) };
}

for (const backend of backends) {
  describe(`OpenAI Agents SDK adapter against the service on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let client: ApprovalsClient;
    const runner = new Runner({ tracingDisabled: true });
    const options = () => ({ client, agentIdentity: AGENT_IDENTITY });
    const stored = async (id: string) => (await findHold(t.service.ctx.db, workspace.id, id))!;
    const holdsWithKey = async (idempotencyKey: string) =>
      (
        await t.service.ctx.db.all('SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2', [
          workspace.id,
          idempotencyKey,
        ])
      ).length;

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: SDK_POLICY }));
      client = new ApprovalsClient({ apiKey: key, baseUrl: t.url });
    });
    after(async () => {
      await t.close();
      assert.deepEqual(offMachine, [], 'nothing was sent off the machine');
    });

    test('allowed by a rule: the tool runs at once, one request to the service', async () => {
      const statuses: number[] = [];
      const recording = new ApprovalsClient({
        apiKey: key,
        baseUrl: t.url,
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          statuses.push(response.status);
          return response;
        },
      });
      const { agent, model, executed, callId } = billingAgent('read_balance', { customer: 'C-7' });
      const { result, holds } = await runWithApprovals(runner, agent, 'What does C-7 owe?', {
        ...options(),
        client: recording,
      });
      assert.deepEqual(executed, ['read_balance']);
      assert.equal(result.finalOutput, 'The tool said: C-7 owes 42 EUR');
      assert.equal(result.interruptions.length, 0);
      assert.equal(model.requests, 2);
      assert.deepEqual(statuses, [201], 'submitted once, never waited');
      assert.equal(holds.length, 1);
      const [held] = holds;
      assert.deepEqual(
        { tool: held!.tool, status: held!.status, approved: held!.approved, callId: held!.callId },
        { tool: 'read_balance', status: 'auto_allowed', approved: true, callId },
      );
      const hold = await stored(held!.id);
      assert.equal(hold.toolName, 'read_balance');
      assert.equal(hold.status, 'auto_allowed');
      assert.deepEqual(hold.arguments, { customer: 'C-7' });
      assert.equal(hold.agentId, 'billing-bot');
      assert.equal(hold.agentLabel, 'Billing bot');
      assert.deepEqual(hold.context, { agent: 'Billing assistant', call_id: callId });
      assert.equal(hold.idempotencyKey, `openai-agents:billing-bot:${callId}`);
    });

    test('needs approval: the run waits, the admin approves, the tool runs once', async () => {
      const { agent, executed } = billingAgent('send_invoice', { customer: 'C-1042', amount: 1200 });
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(runner, agent, 'Invoice C-1042 for 1200 EUR', {
        ...options(),
        context: { ticket: 'T-1042' },
        onHold,
      });
      const pending = await settles('the hold to be reported', reported);
      assert.equal(pending.status, 'pending');
      assert.equal(pending.statusUrl, `${t.url}/a/${pending.id}`);
      assert.equal((await stored(pending.id)).status, 'pending');
      assert.deepEqual(executed, [], 'nothing runs while the hold is pending');

      await decideAs(t, workspace.id, pending.id, 'approve', 'admin@acme.test', 'fine');
      const { result, holds } = await running;
      assert.deepEqual(executed, ['send_invoice']);
      assert.equal(result.finalOutput, 'The tool said: Invoice of 1200 EUR sent to C-1042');
      assert.deepEqual(
        holds.map((h) => ({ id: h.id, status: h.status, approved: h.approved, reason: h.reason })),
        [{ id: pending.id, status: 'approved', approved: true, reason: 'fine' }],
      );
      const hold = await stored(pending.id);
      assert.equal(hold.toolName, 'send_invoice');
      assert.equal(hold.status, 'approved');
      assert.deepEqual(hold.arguments, { customer: 'C-1042', amount: 1200 });
      assert.equal(hold.context.ticket, 'T-1042');
    });

    test('rejected by the admin: the tool never runs, the model gets the comment', async () => {
      const { agent, executed } = billingAgent('send_invoice', { customer: 'C-9', amount: 50 });
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(runner, agent, 'Invoice C-9', { ...options(), onHold });
      const pending = await settles('the hold to be reported', reported);
      await decideAs(t, workspace.id, pending.id, 'reject', 'admin@acme.test', 'Not this month');
      const { result, holds } = await running;
      assert.deepEqual(executed, []);
      assert.equal(
        result.finalOutput,
        'The tool said: Not run: the approvals service rejected this action: Not this month.',
      );
      assert.deepEqual(
        holds.map((h) => ({ status: h.status, approved: h.approved, reason: h.reason })),
        [{ status: 'rejected', approved: false, reason: 'Not this month' }],
      );
      const hold = await stored(pending.id);
      assert.equal(hold.toolName, 'send_invoice');
      assert.equal(hold.status, 'rejected');
      assert.equal(hold.reason, 'Not this month');
      assert.deepEqual(hold.arguments, { customer: 'C-9', amount: 50 });
    });

    test("denied by a rule: the tool never runs, the rule's reason reaches the model", async () => {
      const { agent, executed } = billingAgent('delete_account', { customer: 'C-3' });
      const { result, holds } = await runWithApprovals(runner, agent, 'Close the account of C-3', options());
      assert.deepEqual(executed, []);
      assert.equal(
        result.finalOutput,
        'The tool said: Not run: the approvals service rejected this action: Accounts are closed by support.',
      );
      assert.equal(holds.length, 1);
      assert.equal(holds[0]!.status, 'rejected');
      assert.equal(holds[0]!.approved, false);
      const hold = await stored(holds[0]!.id);
      assert.equal(hold.toolName, 'delete_account');
      assert.equal(hold.status, 'rejected');
      assert.equal(hold.reason, 'Accounts are closed by support');
      assert.deepEqual(hold.arguments, { customer: 'C-3' });
    });

    test('a retried run (same tool call id) finds the same hold: no second one, the tool runs once', async () => {
      const args = { customer: 'C-55', amount: 300 };
      const first = billingAgent('send_invoice', args);
      const aborted = new AbortController();
      const firstReport = firstHold();
      const interrupted = runWithApprovals(runner, first.agent, 'Invoice C-55', {
        ...options(),
        signal: aborted.signal,
        onHold: firstReport.onHold,
      });
      interrupted.catch(() => {}); // awaited below; an early failure must not go unhandled
      const pending = await settles('the hold to be reported', firstReport.reported);
      assert.equal(pending.replayed, false);
      // The process "dies" while waiting for the decision.
      aborted.abort();
      await assert.rejects(interrupted, { name: 'AbortError' });
      assert.deepEqual(first.executed, []);

      // The retry: the same conversation replayed, so the model's call has the same id.
      const retry = billingAgent('send_invoice', args, first.callId);
      const retryReport = firstHold();
      const running = runWithApprovals(runner, retry.agent, 'Invoice C-55', {
        ...options(),
        onHold: retryReport.onHold,
      });
      const again = await settles('the hold to be reported again', retryReport.reported);
      assert.equal(again.id, pending.id);
      assert.equal(again.replayed, true);
      assert.equal(again.status, 'pending');
      await decideAs(t, workspace.id, pending.id, 'approve');
      const { result, holds } = await running;
      assert.deepEqual(retry.executed, ['send_invoice']);
      assert.equal(result.finalOutput, 'The tool said: Invoice of 300 EUR sent to C-55');
      assert.equal(holds[0]!.id, pending.id);
      assert.equal(holds[0]!.replayed, true);
      assert.equal(await holdsWithKey(`openai-agents:billing-bot:${first.callId}`), 1);
      assert.equal((await stored(pending.id)).status, 'approved');
    });

    test('resumed from the state saved at the interruption: the same hold, the model is not asked again', async () => {
      const args = { customer: 'C-77', amount: 640 };
      const first = billingAgent('send_invoice', args);
      const aborted = new AbortController();
      const firstReport = firstHold();
      let saved: string | undefined;
      const interrupted = runWithApprovals(runner, first.agent, 'Invoice C-77', {
        ...options(),
        signal: aborted.signal,
        onInterrupted: (state) => {
          saved = state.toString();
        },
        onHold: firstReport.onHold,
      });
      interrupted.catch(() => {}); // awaited below; an early failure must not go unhandled
      const pending = await settles('the hold to be reported', firstReport.reported);
      aborted.abort();
      await assert.rejects(interrupted, { name: 'AbortError' });
      assert.ok(saved, 'the state was handed over before the hold');

      // A new process: the same agent definition, the run restored from what was saved.
      const retry = billingAgent('send_invoice', args, first.callId);
      const restored = await RunState.fromString(retry.agent, saved);
      const retryReport = firstHold();
      const running = runWithApprovals(runner, retry.agent, restored, {
        ...options(),
        onHold: retryReport.onHold,
      });
      const again = await settles('the hold to be reported again', retryReport.reported);
      assert.deepEqual([again.id, again.replayed, again.status], [pending.id, true, 'pending']);
      await decideAs(t, workspace.id, pending.id, 'approve');
      const { result } = await running;
      assert.deepEqual([...first.executed, ...retry.executed], ['send_invoice']);
      assert.equal(result.finalOutput, 'The tool said: Invoice of 640 EUR sent to C-77');
      assert.equal(
        retry.model.requests,
        1,
        'only for the answer after the tool: the call came from the state',
      );
      assert.equal(await holdsWithKey(`openai-agents:billing-bot:${first.callId}`), 1);
    });

    test('two gated calls in one turn: both holds at once; the allowed one runs, the other waits for the admin', async () => {
      const calls = [
        { name: 'read_balance', arguments: { customer: 'C-6' }, callId: newCallId() },
        { name: 'send_invoice', arguments: { customer: 'C-6', amount: 75 }, callId: newCallId() },
      ];
      const { agent, executed } = agentMaking(calls);
      const reports: HeldCall[] = [];
      let pendingReported!: (hold: HeldCall) => void;
      const pendingHold = new Promise<HeldCall>((resolve) => (pendingReported = resolve));
      const running = runWithApprovals(runner, agent, 'Balance and invoice for C-6', {
        ...options(),
        onHold: (hold) => {
          reports.push(hold);
          if (hold.status === 'pending') pendingReported(hold);
        },
      });
      const pending = await settles('the pending hold to be reported', pendingHold);
      assert.deepEqual(executed, [], 'the turn waits for all its calls');
      await decideAs(t, workspace.id, pending.id, 'approve');
      const { result, holds } = await running;
      assert.deepEqual(reports.map((h) => [h.tool, h.status]).sort(), [
        ['read_balance', 'auto_allowed'],
        ['send_invoice', 'pending'],
      ]);
      assert.deepEqual(
        holds.map((h) => [h.tool, h.status, h.callId]),
        [
          ['read_balance', 'auto_allowed', calls[0]!.callId],
          ['send_invoice', 'approved', calls[1]!.callId],
        ],
      );
      assert.deepEqual(executed.sort(), ['read_balance', 'send_invoice']);
      assert.equal(result.finalOutput, 'The tool said: C-6 owes 42 EUR | Invoice of 75 EUR sent to C-6');
    });

    test('still pending at the timeout: not run, the model is told it waits, with the status page', async () => {
      const { agent, executed } = billingAgent('send_invoice', { customer: 'C-8', amount: 10 });
      const { result, holds } = await runWithApprovals(runner, agent, 'Invoice C-8', {
        ...options(),
        timeoutMs: 1000,
      });
      assert.deepEqual(executed, []);
      const [held] = holds;
      assert.equal(held!.status, 'pending');
      assert.equal(held!.approved, false);
      assert.equal(
        result.finalOutput,
        `The tool said: Not run: the action is still waiting for approval (${held!.statusUrl}); calling it again would ask again.`,
      );
      assert.equal((await stored(held!.id)).status, 'pending');
    });

    test('expired while waiting: not run, the model is told nobody decided', async () => {
      const { agent, executed } = billingAgent('send_invoice', { customer: 'C-4', amount: 20 });
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(runner, agent, 'Invoice C-4', { ...options(), onHold });
      const pending = await settles('the hold to be reported', reported);
      await t.clock.advance(31 * 60_000); // past the rule's 30 minutes
      const { result, holds } = await running;
      assert.deepEqual(executed, []);
      assert.equal(holds[0]!.status, 'expired');
      assert.equal(
        result.finalOutput,
        `The tool said: Not run: nobody decided before the approval request expired (${pending.statusUrl}).`,
      );
      assert.equal((await stored(pending.id)).status, 'expired');
    });

    test('the service cannot be reached: the run fails, nothing is approved', async () => {
      const { agent, executed } = billingAgent('read_balance', { customer: 'C-2' });
      const unreachable = new ApprovalsClient({ apiKey: key, baseUrl: 'http://127.0.0.1:9', maxRetries: 0 });
      await assert.rejects(
        runWithApprovals(runner, agent, 'What does C-2 owe?', { ...options(), client: unreachable }),
        { name: 'ApprovalsNetworkError' },
      );
      assert.deepEqual(executed, []);
    });
  });
}
