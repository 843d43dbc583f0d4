/**
 * Issue 24, part 4: the Vercel AI SDK adapter (packages/ai-sdk) against the real service, driven by the
 * AI SDK's own mock model (no network). A scripted model asks for one tool call, then answers with
 * what the tool gave back, so each test sees both what ran and what the model was told.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { generateText, jsonSchema, type ModelMessage, stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { answerApprovals, type HoldOutcome, withApprovals } from '../packages/ai-sdk/src/index.ts';
import { ApprovalsClient } from '../packages/sdk/src/index.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { SDK_POLICY } from './support/sdk-policy.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { runApprovedExample } from './support/readme-example.ts';
import { until } from './support/wait.ts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** Turn 1: call `toolName` with `input` (call id `callId`); then: say what the tool result was. */
function scriptedModel(toolName: string, input: object, callId: string) {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last?.role !== 'tool')
        return {
          content: [{ type: 'tool-call', toolCallId: callId, toolName, input: JSON.stringify(input) }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        };
      const part = last.content.find((p) => p.type === 'tool-result');
      const output = part?.type === 'tool-result' ? part.output : undefined;
      return {
        content: [{ type: 'text', text: `tool said: ${JSON.stringify(output)}` }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

/**
 * The README's example as a user runs it (see support/readme-example.ts), with the model block swapped
 * for a scripted mock model: no network, no OpenAI key.
 */
function readmeExample(): string {
  const readme = readFileSync(new URL('../packages/ai-sdk/README.md', import.meta.url), 'utf8');
  const code = readme.split('```js\n')[1]!.split('```')[0]!;
  const mock = `import { MockLanguageModelV3 } from 'ai/test';
const usage = ${JSON.stringify(usage)};
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => prompt.at(-1).role === 'tool'
    ? { content: [{ type: 'text', text: 'model saw: ' + JSON.stringify(prompt.at(-1).content[0].output) }], finishReason: { unified: 'stop' }, usage, warnings: [] }
    : { content: [{ type: 'tool-call', toolCallId: 'call_readme_' + process.pid, toolName: 'send_invoice', input: JSON.stringify({ customer: 'ACME Corp', amount: 1200 }) }], finishReason: { unified: 'tool-calls' }, usage, warnings: [] },
});
`;
  const swapped = code.replace(/\/\/ --- model ---[\s\S]*\/\/ --- end of model ---\n/, mock);
  assert.notEqual(swapped, code, 'the README marks its model block');
  return swapped;
}

let sequence = 0;
const callId = () => `call_${process.pid}_${++sequence}`;

for (const backend of backends) {
  describe(`the AI SDK adapter on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let client: ApprovalsClient;
    const ran: { tool: string; input: unknown }[] = [];
    const tools = {
      read_balance: tool({
        inputSchema: jsonSchema<{ account: string }>({
          type: 'object',
          properties: { account: { type: 'string' } },
        }),
        execute: async (input) => (ran.push({ tool: 'read_balance', input }), { balance: 420 }),
      }),
      send_invoice: tool({
        inputSchema: jsonSchema<{ amount: number }>({
          type: 'object',
          properties: { amount: { type: 'number' } },
        }),
        execute: async (input) => (ran.push({ tool: 'send_invoice', input }), 'invoice sent'),
      }),
      delete_account: tool({
        inputSchema: jsonSchema<{ account: string }>({
          type: 'object',
          properties: { account: { type: 'string' } },
        }),
        execute: async (input) => (ran.push({ tool: 'delete_account', input }), 'deleted'),
      }),
    };
    const agent = { id: 'ai-sdk-bot', label: 'Billing assistant' };

    before(async () => {
      t = await startTestService(backend);
      let key: string;
      ({ workspace, key } = await t.workspace({ config: SDK_POLICY }));
      client = new ApprovalsClient({ apiKey: key, baseUrl: t.url });
    });
    after(() => t?.close());

    /** The hold of a tool call once it is stored (the adapter is waiting on it meanwhile). */
    const storedHold = (toolCallId: string) =>
      until(
        `the hold of ${toolCallId}`,
        async () =>
          (await t.service.ctx.db.one<{
            id: string;
            status: string;
            tool_name: string;
            agent_id: string;
            arguments: string;
          }>(
            'SELECT id, status, tool_name, agent_id, arguments FROM holds WHERE workspace_id = $1 AND idempotency_key = $2',
            [workspace.id, `ai-sdk:${agent.id}:${toolCallId}`],
          )) ?? undefined,
      );

    const run = (toolName: string, input: object, id: string, onHold?: (hold: HoldOutcome) => void) =>
      generateText({
        model: scriptedModel(toolName, input, id),
        tools: withApprovals(tools, { client, agent, onHold, context: { conversation: 'c-1' } }),
        prompt: 'Do the task.',
        stopWhen: stepCountIs(3),
      });

    test('allowed by a rule: the tool runs at once, and the hold is stored with its arguments', async () => {
      ran.length = 0;
      const id = callId();
      const result = await run('read_balance', { account: 'A-1' }, id);
      assert.deepEqual(ran, [{ tool: 'read_balance', input: { account: 'A-1' } }]);
      assert.match(result.text, /"balance":420/);
      const hold = await storedHold(id);
      assert.equal(hold.status, 'auto_allowed');
      assert.equal(hold.agent_id, agent.id);
      assert.deepEqual(JSON.parse(hold.arguments), { account: 'A-1' });
    });

    test('held for approval: the tool runs once the admin approves, not before', async () => {
      ran.length = 0;
      const id = callId();
      const running = run('send_invoice', { amount: 1200 }, id);
      const hold = await storedHold(id);
      assert.equal(hold.status, 'pending');
      assert.deepEqual(ran, [], 'nothing runs while the hold waits');
      await decideAs(t, workspace.id, hold.id, 'approve', 'admin@acme.test', 'ok');
      const result = await running;
      assert.deepEqual(ran, [{ tool: 'send_invoice', input: { amount: 1200 } }]);
      assert.match(result.text, /invoice sent/);
    });

    test('rejected by the admin, or denied by a rule: the tool never runs, the model is told why', async () => {
      ran.length = 0;
      const id = callId();
      const seen: HoldOutcome[] = [];
      const running = run('send_invoice', { amount: 9_999_999 }, id, (hold) => seen.push(hold));
      const hold = await storedHold(id);
      await decideAs(t, workspace.id, hold.id, 'reject', 'admin@acme.test', 'Too large, ask finance');
      const rejected = await running;
      assert.match(rejected.text, /send_invoice was not approved \(rejected\): Too large, ask finance/);
      assert.equal(seen[0]?.status, 'pending', 'reported once submitted, before the wait');

      const denied = await run('delete_account', { account: 'A-1' }, callId());
      assert.match(denied.text, /Accounts are closed by support/);
      assert.deepEqual(ran, []);
    });

    test('needsApproval answered by the service: approved runs, rejected reaches the model as denied', async () => {
      ran.length = 0;
      const hooked = { send_invoice: { ...tools.send_invoice, needsApproval: true } };
      const conversation = async (id: string, verdict: 'approve' | 'reject') => {
        const model = scriptedModel('send_invoice', { amount: 50 }, id);
        const messages: ModelMessage[] = [{ role: 'user', content: 'Send the invoice.' }];
        const first = await generateText({ model, tools: hooked, messages, stopWhen: stepCountIs(3) });
        assert.deepEqual(ran, [], 'the SDK asks for approval before running it');
        const answering = answerApprovals(first, { client, agent });
        const hold = await storedHold(id);
        await decideAs(
          t,
          workspace.id,
          hold.id,
          verdict,
          'admin@acme.test',
          verdict === 'reject' ? 'Not today' : null,
        );
        const answer = await answering;
        assert.equal(answer.holds.length, 1);
        messages.push(...first.response.messages, ...answer.messages);
        return generateText({ model, tools: hooked, messages, stopWhen: stepCountIs(3) });
      };
      const approved = await conversation(callId(), 'approve');
      assert.deepEqual(ran, [{ tool: 'send_invoice', input: { amount: 50 } }]);
      assert.match(approved.text, /invoice sent/);
      ran.length = 0;
      const rejected = await conversation(callId(), 'reject');
      assert.deepEqual(ran, []);
      assert.match(rejected.text, /execution-denied.*Not today/);
    });

    test("the README's example runs as written, and waits for the approver", async () => {
      const { key } = await t.workspace({ config: SDK_POLICY });
      const { out, holdId } = await runApprovedExample(
        t,
        readmeExample(),
        { APPROVALS_URL: t.url, APPROVALS_KEY: key },
        (pid) => `ai-sdk:billing-assistant:call_readme_${pid}`,
      );
      assert.match(out, new RegExp(`hold ${holdId}: pending \\(${t.url}/a/${holdId}\\)`));
      assert.match(out, /model saw: .*invoice of 1200 EUR sent to ACME Corp/);
    });

    test('a streaming tool (async *execute) stays one: its last result reaches the model after the hold', async () => {
      const steps: string[] = [];
      const streaming = {
        read_balance: tool({
          inputSchema: jsonSchema<{ account: string }>({
            type: 'object',
            properties: { account: { type: 'string' } },
          }),
          async *execute() {
            steps.push('started');
            yield 'looking…';
            yield { balance: 77 };
          },
        }),
      };
      const result = await generateText({
        model: scriptedModel('read_balance', { account: 'A-3' }, callId()),
        tools: withApprovals(streaming, { client, agent }),
        prompt: 'Read it.',
        stopWhen: stepCountIs(3),
      });
      assert.deepEqual(steps, ['started']);
      assert.match(result.text, /"balance":77/);
    });

    test('nothing runs when the service cannot be reached, or nobody decides in time', async () => {
      ran.length = 0;
      const closed = new ApprovalsClient({
        apiKey: 'svc_live_x',
        baseUrl: 'http://127.0.0.1:9',
        maxRetries: 0,
      });
      const unreachable = await generateText({
        model: scriptedModel('read_balance', { account: 'A-1' }, callId()),
        tools: withApprovals(tools, { client: closed, agent }),
        prompt: 'Read it.',
        stopWhen: stepCountIs(3),
      });
      assert.match(unreachable.text, /error-text/);
      const waiting = await generateText({
        model: scriptedModel('send_invoice', { amount: 3 }, callId()),
        tools: withApprovals(tools, { client, agent, timeoutMs: 300 }),
        prompt: 'Send it.',
        stopWhen: stepCountIs(3),
      });
      assert.match(waiting.text, /send_invoice is still waiting for approval \(http.*\/a\/svc_pa_/);
      assert.deepEqual(ran, []);
    });

    test('the idempotency key can be given: another conversation with the same call id is a new hold', async () => {
      const id = callId();
      const keyed = (conversation: string) =>
        generateText({
          model: scriptedModel('read_balance', { account: 'A-4' }, id),
          tools: withApprovals(tools, {
            client,
            agent,
            idempotencyKey: ({ toolCallId }) => `${conversation}:${toolCallId}`,
          }),
          prompt: 'Read it.',
          stopWhen: stepCountIs(3),
        });
      await keyed('conv-1');
      await keyed('conv-2');
      const { n } = (await t.service.ctx.db.one<{ n: number }>(
        'SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1 AND idempotency_key IN ($2, $3)',
        [workspace.id, `conv-1:${id}`, `conv-2:${id}`],
      ))!;
      assert.equal(Number(n), 2);
    });

    test('a step retried with the same tool call is the same hold', async () => {
      const id = callId();
      await run('read_balance', { account: 'A-2' }, id);
      await run('read_balance', { account: 'A-2' }, id);
      const { n } = (await t.service.ctx.db.one<{ n: number }>(
        'SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1 AND idempotency_key = $2',
        [workspace.id, `ai-sdk:${agent.id}:${id}`],
      ))!;
      assert.equal(Number(n), 1);
    });
  });
}
