/**
 * Issue 41, part 4: the adapters and a call an approver changed (a rule's `editable`). The AI SDK
 * adapter's gated tool runs with the changed input; where the framework runs the model's input itself
 * (the AI SDK's own tool approval, the Agents SDK's interruptions) the call is not run, and the model
 * is told why. Stub clients: the service's side is tested in approve-with-changes.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonSchema, tool } from 'ai';
import { answerApprovals, type HoldOutcome, withApprovals } from '../packages/ai-sdk/src/index.ts';

const changedHold = (args: Record<string, unknown>): HoldOutcome => ({
  id: 'svc_pa_1',
  status: 'approved',
  statusUrl: 'http://127.0.0.1:9/a/svc_pa_1',
  approved: true,
  rejected: false,
  decision: { reason: null },
  changed: true,
  arguments: args,
});

const clientAnswering = (hold: HoldOutcome) => ({ hold: async () => hold });

test('AI SDK: a gated tool runs with the changed input', async () => {
  const ran: unknown[] = [];
  const tools = withApprovals(
    {
      pay: tool({
        inputSchema: jsonSchema<{ amount: number }>({ type: 'object' }),
        execute: async (input) => {
          ran.push(input);
          return 'paid';
        },
      }),
    },
    { client: clientAnswering(changedHold({ amount: 90 })), agent: { id: 'bot' } },
  );
  const execution = { toolCallId: 'c1', messages: [] };
  assert.equal(await tools.pay.execute!({ amount: 900 }, execution), 'paid');
  assert.deepEqual(ran, [{ amount: 90 }]);
});

test("AI SDK: the SDK's own tool approval cannot carry changes: not approved, and the model is told", async () => {
  const { messages } = await answerApprovals(
    {
      content: [
        {
          type: 'tool-approval-request',
          approvalId: 'a1',
          toolCall: { toolName: 'pay', toolCallId: 'c1', input: { amount: 900 } },
        },
      ],
    },
    { client: clientAnswering(changedHold({ amount: 90 })), agent: { id: 'bot' } },
  );
  const [response] = messages[0]!.content as { approved: boolean; reason?: string }[];
  assert.equal(response!.approved, false);
  assert.match(response!.reason!, /approved with changes/);
});
