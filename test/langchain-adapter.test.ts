/**
 * The LangChain adapter (packages/langchain) against the real service, on each storage backend: a
 * real agent (`createAgent` from `langchain`, with `humanInTheLoopMiddleware` and a LangGraph
 * checkpointer) whose model is LangChain's own scripted test model (`fakeModel` of
 * `@langchain/core/testing`: no network), and a tool that pauses itself with LangGraph's `interrupt()`.
 * Every review is answered by a hold.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { interrupt, MemorySaver } from '@langchain/langgraph';
import { fakeModel } from '@langchain/core/testing';
import {
  AIMessage,
  type BaseMessage,
  createAgent,
  type HITLResponse,
  humanInTheLoopMiddleware,
  ToolMessage,
  tool,
} from 'langchain';
import { z } from 'zod';
import { type HeldCall, runWithApprovals } from '../packages/langchain/src/index.ts';
import { ApprovalsClient } from '../packages/sdk/src/index.ts';
import { decideHold } from '../src/services/decide-hold.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { settles } from './support/wait.ts';

const POLICY = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: delete_account, classification: deny }
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: SDK, tool: refund, classification: approval }
rules:
  - name: Invoices need the admin
    tool: send_invoice
    effect: approval
    approvers: [admin@acme.test]
    timeout_minutes: 30
    editable: [amount]
  - { name: Refunds need the admin, tool: refund, effect: approval, approvers: [admin@acme.test], editable: [amount] }
  - { name: No deletions, tool: delete_account, effect: deny, reason: Accounts are closed by support }
`;

const AGENT_IDENTITY = { id: 'billing-bot', label: 'Billing bot' };

interface ScriptedCall {
  name: string;
  args: Record<string, unknown>;
  id: string;
}

let sequence = 0;
const newId = (what: string) => `${what}_${++sequence}_${process.pid}`;

/** What the model answers once the tools are done: every tool message it got, so tests read them. */
const sayWhatTheToolsSaid = (messages: BaseMessage[]) =>
  new AIMessage(
    `The tool said: ${messages
      .filter((message) => ToolMessage.isInstance(message))
      .map((message) => message.text)
      .join(' | ')}`,
  );

/**
 * An agent with the billing tools, reviewed by the middleware (`refund` asks by `interrupt()` itself,
 * and allows no edit), whose model makes `calls` in its first turn (none when they came from a saved
 * thread) and then says what the tools said.
 */
function billingAgent(calls: ScriptedCall[], checkpointer = new MemorySaver()) {
  const executed: { name: string; args: unknown }[] = [];
  const model = fakeModel();
  if (calls.length > 0) model.respondWithTools(calls);
  model.respond(sayWhatTheToolsSaid);
  const ran = (name: string, args: unknown) => executed.push({ name, args });
  const agent = createAgent({
    model,
    checkpointer,
    tools: [
      tool(
        (args: { customer: string }) => {
          ran('read_balance', args);
          return `${args.customer} owes 42 EUR`;
        },
        {
          name: 'read_balance',
          description: "A customer's balance",
          schema: z.object({ customer: z.string() }),
        },
      ),
      tool(
        (args: { customer: string; amount: number }) => {
          ran('send_invoice', args);
          return `Invoice of ${args.amount} EUR sent to ${args.customer}`;
        },
        {
          name: 'send_invoice',
          description: 'Sends an invoice',
          schema: z.object({ customer: z.string(), amount: z.number() }),
        },
      ),
      tool(
        (args: { customer: string }) => {
          ran('delete_account', args);
          return `${args.customer} deleted`;
        },
        {
          name: 'delete_account',
          description: "Closes a customer's account",
          schema: z.object({ customer: z.string() }),
        },
      ),
      tool(
        (args: { customer: string; amount: number }) => {
          // A tool that asks itself, as LangGraph's `interrupt()` lets any node or tool do.
          const { decisions } = interrupt({
            actionRequests: [{ name: 'refund', args, description: `Refund ${args.amount} EUR` }],
            reviewConfigs: [{ actionName: 'refund', allowedDecisions: ['approve', 'reject'] }],
          }) as HITLResponse;
          const [decision] = decisions;
          if (decision?.type !== 'approve')
            return `Refund refused: ${decision?.type === 'reject' && decision.message}`;
          ran('refund', args);
          return `Refunded ${args.amount} EUR to ${args.customer}`;
        },
        {
          name: 'refund',
          description: 'Refunds a customer',
          schema: z.object({ customer: z.string(), amount: z.number() }),
        },
      ),
      tool(
        (args: { customer: string }) => {
          // An interrupt that is no tool-call review: a question for the user, not the service's.
          const answer = interrupt({ question: `Which purchase order is ${args.customer}'s?` }) as string;
          ran('ask_user', args);
          return answer;
        },
        { name: 'ask_user', description: 'Asks the user', schema: z.object({ customer: z.string() }) },
      ),
    ],
    middleware: [
      humanInTheLoopMiddleware({
        interruptOn: { read_balance: true, send_invoice: true, delete_account: true },
      }),
    ],
  });
  return { agent, model, executed, checkpointer };
}

/** The run's last message: what the model said at the end. */
const finalText = (result: { messages: BaseMessage[] }) => result.messages.at(-1)!.text;

/** A promise of the first hold `onHold` reports, and the callback that reports it. */
function firstHold() {
  let report!: (hold: HeldCall) => void;
  const reported = new Promise<HeldCall>((resolve) => (report = resolve));
  return { reported, onHold: (hold: HeldCall) => report(hold) };
}

const ask = (text: string) => ({ messages: [{ role: 'user', content: text }] });

for (const backend of backends) {
  describe(`LangChain adapter against the service on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let client: ApprovalsClient;
    const options = (thread = newId('thread')) => ({
      client,
      agentIdentity: AGENT_IDENTITY,
      config: { configurable: { thread_id: thread } },
    });
    const stored = async (id: string) => (await findHold(t.service.ctx.db, workspace.id, id))!;
    const holdsWithKey = async (idempotencyKey: string) =>
      (
        await t.service.ctx.db.all('SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2', [
          workspace.id,
          idempotencyKey,
        ])
      ).length;
    const approveWithChanges = async (holdId: string, changes: Record<string, unknown>) =>
      decideHold(t.service.ctx, {
        workspaceId: workspace.id,
        holdId,
        memberId: (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!.id,
        verdict: 'approve',
        channel: 'inbox',
        changes,
      });

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: POLICY }));
      client = new ApprovalsClient({ apiKey: key, baseUrl: t.url });
    });
    after(() => t?.close());

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
      const { agent, model, executed } = billingAgent([
        { name: 'read_balance', args: { customer: 'C-7' }, id: newId('call') },
      ]);
      const thread = newId('thread');
      const { result, holds } = await runWithApprovals(agent, ask('What does C-7 owe?'), {
        ...options(thread),
        client: recording,
      });
      assert.deepEqual(executed, [{ name: 'read_balance', args: { customer: 'C-7' } }]);
      assert.equal(finalText(result), 'The tool said: C-7 owes 42 EUR');
      assert.equal(result.__interrupt__, undefined);
      assert.equal(model.callCount, 2);
      assert.deepEqual(statuses, [201], 'submitted once, never waited');
      assert.equal(holds.length, 1);
      const [held] = holds;
      assert.deepEqual(
        [held!.tool, held!.status, held!.decision],
        ['read_balance', 'auto_allowed', 'approve'],
      );
      const hold = await stored(held!.id);
      assert.equal(hold.toolName, 'read_balance');
      assert.equal(hold.status, 'auto_allowed');
      assert.deepEqual(hold.arguments, { customer: 'C-7' });
      assert.equal(hold.agentId, 'billing-bot');
      assert.equal(hold.agentLabel, 'Billing bot');
      assert.equal(hold.context.thread_id, thread);
      assert.match(
        String(hold.context.description),
        /^Tool execution requires approval\n\nTool: read_balance/,
      );
      assert.match(hold.idempotencyKey, /^langchain:billing-bot:[0-9a-f]{32}:0$/);
    });

    test('needs approval: the run waits, the admin approves, the tool runs once', async () => {
      const { agent, executed } = billingAgent([
        { name: 'send_invoice', args: { customer: 'C-1042', amount: 1200 }, id: newId('call') },
      ]);
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(agent, ask('Invoice C-1042 for 1200 EUR'), {
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
      assert.deepEqual(executed, [{ name: 'send_invoice', args: { customer: 'C-1042', amount: 1200 } }]);
      assert.equal(finalText(result), 'The tool said: Invoice of 1200 EUR sent to C-1042');
      assert.deepEqual(
        holds.map((h) => ({ id: h.id, status: h.status, decision: h.decision, reason: h.reason })),
        [{ id: pending.id, status: 'approved', decision: 'approve', reason: 'fine' }],
      );
      assert.equal((await stored(pending.id)).context.ticket, 'T-1042');
    });

    test('rejected by the admin: the tool never runs, the model gets the comment', async () => {
      const { agent, executed } = billingAgent([
        { name: 'send_invoice', args: { customer: 'C-9', amount: 50 }, id: newId('call') },
      ]);
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(agent, ask('Invoice C-9'), { ...options(), onHold });
      const pending = await settles('the hold to be reported', reported);
      await decideAs(t, workspace.id, pending.id, 'reject', 'admin@acme.test', 'Not this month');
      const { result, holds } = await running;
      assert.deepEqual(executed, []);
      assert.equal(
        finalText(result),
        'The tool said: Not run: the approvals service rejected this action: Not this month.',
      );
      const answer = result.messages.find((message) => ToolMessage.isInstance(message));
      assert.equal((answer as ToolMessage).status, 'error', "LangChain's rejection of the call");
      assert.deepEqual(
        holds.map((h) => ({ status: h.status, decision: h.decision, reason: h.reason })),
        [{ status: 'rejected', decision: 'reject', reason: 'Not this month' }],
      );
      assert.equal((await stored(pending.id)).status, 'rejected');
    });

    test('approved with changes (the rule names amount editable): LangChain edits the call, the tool runs with the change', async () => {
      const { agent, executed } = billingAgent([
        { name: 'send_invoice', args: { customer: 'C-21', amount: 1500 }, id: newId('call') },
      ]);
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(agent, ask('Invoice C-21 for 1500 EUR'), { ...options(), onHold });
      const pending = await settles('the hold to be reported', reported);
      const decided = await approveWithChanges(pending.id, { amount: 1000 });
      assert.equal(decided.outcome, 'recorded');
      const { result, holds } = await running;
      assert.deepEqual(executed, [{ name: 'send_invoice', args: { customer: 'C-21', amount: 1000 } }]);
      assert.equal(finalText(result), 'The tool said: Invoice of 1000 EUR sent to C-21');
      assert.deepEqual(
        holds.map((h) => ({ status: h.status, decision: h.decision, arguments: h.arguments })),
        [{ status: 'approved', decision: 'edit', arguments: { customer: 'C-21', amount: 1000 } }],
      );
      const hold = await stored(pending.id);
      assert.deepEqual(hold.arguments, { customer: 'C-21', amount: 1500 }, 'the submission as it was');
      assert.deepEqual(hold.changedArguments, { customer: 'C-21', amount: 1000 });
    });

    test("denied by a rule: the tool never runs, the rule's reason reaches the model", async () => {
      const { agent, executed } = billingAgent([
        { name: 'delete_account', args: { customer: 'C-3' }, id: newId('call') },
      ]);
      const { result, holds } = await runWithApprovals(agent, ask('Close the account of C-3'), options());
      assert.deepEqual(executed, []);
      assert.equal(
        finalText(result),
        'The tool said: Not run: the approvals service rejected this action: Accounts are closed by support.',
      );
      assert.deepEqual(
        holds.map((h) => [h.tool, h.status, h.decision]),
        [['delete_account', 'rejected', 'reject']],
      );
      assert.equal((await stored(holds[0]!.id)).reason, 'Accounts are closed by support');
    });

    test('two reviewed calls in one turn: both holds at once; the allowed one waits with the other, both run once approved', async () => {
      const calls = [
        { name: 'read_balance', args: { customer: 'C-6' }, id: newId('call') },
        { name: 'send_invoice', args: { customer: 'C-6', amount: 75 }, id: newId('call') },
      ];
      const { agent, executed } = billingAgent(calls);
      const reports: HeldCall[] = [];
      let pendingReported!: (hold: HeldCall) => void;
      const pendingHold = new Promise<HeldCall>((resolve) => (pendingReported = resolve));
      const running = runWithApprovals(agent, ask('Balance and invoice for C-6'), {
        ...options(),
        onHold: (hold) => {
          reports.push(hold);
          if (hold.status === 'pending') pendingReported(hold);
        },
      });
      const pending = await settles('the pending hold to be reported', pendingHold);
      assert.equal(executed.length, 0, 'the turn waits for all its calls');
      await decideAs(t, workspace.id, pending.id, 'approve');
      const { result, holds } = await running;
      assert.deepEqual(reports.map((h) => [h.tool, h.status]).sort(), [
        ['read_balance', 'auto_allowed'],
        ['send_invoice', 'pending'],
      ]);
      assert.deepEqual(
        holds.map((h) => [h.tool, h.status]),
        [
          ['read_balance', 'auto_allowed'],
          ['send_invoice', 'approved'],
        ],
      );
      assert.deepEqual(executed.map((call) => call.name).sort(), ['read_balance', 'send_invoice']);
      assert.equal(finalText(result), 'The tool said: C-6 owes 42 EUR | Invoice of 75 EUR sent to C-6');
    });

    test("LangGraph's interrupt() in a tool: answered by a hold; a change the review cannot take is not run", async () => {
      const approved = billingAgent([
        { name: 'refund', args: { customer: 'C-31', amount: 80 }, id: newId('call') },
      ]);
      const first = firstHold();
      const running = runWithApprovals(approved.agent, ask('Refund C-31'), {
        ...options(),
        onHold: first.onHold,
      });
      const pending = await settles('the hold to be reported', first.reported);
      assert.equal((await stored(pending.id)).context.description, 'Refund 80 EUR');
      await decideAs(t, workspace.id, pending.id, 'approve');
      const { result } = await running;
      assert.deepEqual(approved.executed, [{ name: 'refund', args: { customer: 'C-31', amount: 80 } }]);
      assert.equal(finalText(result), 'The tool said: Refunded 80 EUR to C-31');

      // Its review allows approve and reject only: an approval with changes cannot be answered as either.
      const changed = billingAgent([
        { name: 'refund', args: { customer: 'C-32', amount: 90 }, id: newId('call') },
      ]);
      const second = firstHold();
      const refused = runWithApprovals(changed.agent, ask('Refund C-32'), {
        ...options(),
        onHold: second.onHold,
      });
      const held = await settles('the hold to be reported', second.reported);
      await approveWithChanges(held.id, { amount: 10 });
      const { result: refusedResult, holds } = await refused;
      assert.deepEqual(changed.executed, []);
      assert.deepEqual(
        holds.map((h) => [h.status, h.decision]),
        [['approved', 'reject']],
      );
      assert.equal(
        finalText(refusedResult),
        'The tool said: Refund refused: Not run: the approvals service rejected this action: an approver changed its arguments, and its review allows no edit (approve it unchanged).',
      );
    });

    test('a run stopped while it waits resumes its thread (input null): the same hold, the model is not asked again', async () => {
      const first = billingAgent([
        { name: 'send_invoice', args: { customer: 'C-77', amount: 640 }, id: newId('call') },
      ]);
      const thread = newId('thread');
      const aborted = new AbortController();
      const firstReport = firstHold();
      const interrupted = runWithApprovals(first.agent, ask('Invoice C-77'), {
        ...options(thread),
        signal: aborted.signal,
        onHold: firstReport.onHold,
      });
      interrupted.catch(() => {}); // awaited below; an early failure must not go unhandled
      const pending = await settles('the hold to be reported', firstReport.reported);
      assert.equal(pending.replayed, false);
      aborted.abort(); // the process "dies" while waiting for the decision
      await assert.rejects(interrupted, { name: 'AbortError' });

      // A new process: the same agent definition on the same checkpointer, the thread continued.
      const retry = billingAgent([], first.checkpointer);
      const retryReport = firstHold();
      const running = runWithApprovals(retry.agent, null, { ...options(thread), onHold: retryReport.onHold });
      const again = await settles('the hold to be reported again', retryReport.reported);
      assert.deepEqual([again.id, again.replayed, again.status], [pending.id, true, 'pending']);
      await decideAs(t, workspace.id, pending.id, 'approve');
      const { result } = await running;
      assert.deepEqual(
        [...first.executed, ...retry.executed],
        [{ name: 'send_invoice', args: { customer: 'C-77', amount: 640 } }],
      );
      assert.equal(finalText(result), 'The tool said: Invoice of 640 EUR sent to C-77');
      assert.equal(
        retry.model.callCount,
        1,
        'only for the answer after the tool: the call came from the thread',
      );
      assert.equal(await holdsWithKey((await stored(pending.id)).idempotencyKey), 1);
    });

    test('still pending at the timeout: not run, the model is told it waits, with the status page', async () => {
      const { agent, executed } = billingAgent([
        { name: 'send_invoice', args: { customer: 'C-8', amount: 10 }, id: newId('call') },
      ]);
      const { result, holds } = await runWithApprovals(agent, ask('Invoice C-8'), {
        ...options(),
        timeoutMs: 1000,
      });
      assert.deepEqual(executed, []);
      const [held] = holds;
      assert.deepEqual([held!.status, held!.decision], ['pending', 'reject']);
      assert.equal(
        finalText(result),
        `The tool said: Not run: the action is still waiting for approval (${held!.statusUrl}); calling it again would ask again.`,
      );
      assert.equal((await stored(held!.id)).status, 'pending');
    });

    test('expired while waiting: not run, the model is told nobody decided', async () => {
      const { agent, executed } = billingAgent([
        { name: 'send_invoice', args: { customer: 'C-4', amount: 20 }, id: newId('call') },
      ]);
      const { reported, onHold } = firstHold();
      const running = runWithApprovals(agent, ask('Invoice C-4'), { ...options(), onHold });
      const pending = await settles('the hold to be reported', reported);
      await t.clock.advance(31 * 60_000); // past the rule's 30 minutes
      const { result, holds } = await running;
      assert.deepEqual(executed, []);
      assert.deepEqual([holds[0]!.status, holds[0]!.decision], ['expired', 'reject']);
      assert.equal(
        finalText(result),
        `The tool said: Not run: nobody decided before the approval request expired (${pending.statusUrl}).`,
      );
      assert.equal((await stored(pending.id)).status, 'expired');
    });

    test('an interrupt that is no tool-call review is left to the caller: no hold, the run returns with it', async () => {
      const { agent, executed } = billingAgent([
        { name: 'ask_user', args: { customer: 'C-5' }, id: newId('call') },
      ]);
      const { result, holds } = await runWithApprovals(agent, ask('Which PO for C-5?'), options());
      assert.deepEqual(holds, []);
      assert.deepEqual(
        result.__interrupt__?.map((pause) => pause.value),
        [{ question: "Which purchase order is C-5's?" }],
      );
      assert.deepEqual(executed, []);
    });

    test('the service cannot be reached: the run fails, nothing is approved', async () => {
      const { agent, executed } = billingAgent([
        { name: 'read_balance', args: { customer: 'C-2' }, id: newId('call') },
      ]);
      const unreachable = new ApprovalsClient({ apiKey: key, baseUrl: 'http://127.0.0.1:9', maxRetries: 0 });
      await assert.rejects(
        runWithApprovals(agent, ask('What does C-2 owe?'), { ...options(), client: unreachable }),
        { name: 'ApprovalsNetworkError' },
      );
      assert.deepEqual(executed, []);
    });
  });
}
