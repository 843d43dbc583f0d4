/**
 * The OpenAI Agents adapter's README example, run as written (issue 24, part 4; issue 42: on the
 * system's Node.js, in a default `npm init -y` project, see support/readme-example.ts), with a
 * scripted model set as the default model provider before it runs (no network, no OpenAI key). The admin approves the hold it waits on; the example prints what the README
 * says it prints.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sqlite } from './support/backends.ts';
import { runApprovedExample } from './support/readme-example.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = /```yaml\n([\s\S]*?)```/;

function example(): { workspace: string; script: string } {
  const readme = readFileSync(new URL('../packages/openai-agents/README.md', import.meta.url), 'utf8');
  const workspace = WORKSPACE.exec(readme)![1]!;
  const code = readme.split('```js\n')[1]!.split('```')[0]!;
  // Stands in for OpenAI: asks for send_invoice once, then repeats what the tool answered.
  const scriptedModel = `
import { setDefaultModelProvider, setTracingDisabled, Usage } from '@openai/agents';
setTracingDisabled(true);
setDefaultModelProvider({ getModel: () => ({
  async getResponse(request) {
    const result = (typeof request.input === 'string' ? [] : request.input).find((i) => i.type === 'function_call_result');
    if (!result) return { usage: new Usage(), output: [{ type: 'function_call', status: 'completed', callId: 'call_readme_' + process.pid,
      name: 'send_invoice', arguments: JSON.stringify({ customer: 'C-1042', amount: 1200 }) }] };
    const text = typeof result.output === 'string' ? result.output : result.output.text;
    return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text: 'the tool said: ' + text }] }] };
  },
  getStreamedResponse() { throw new Error('not streamed'); },
}) });
`;
  const script = scriptedModel + code;
  return { workspace, script };
}

describe("the OpenAI Agents adapter's README", () => {
  let t: TestService;
  before(async () => {
    t = await startTestService(sqlite);
  });
  after(() => t?.close());

  test('its example runs as written and waits for the approver', async () => {
    const { workspace: config, script } = example();
    const { key } = await t.workspace({ config });
    const { out, holdId } = await runApprovedExample(
      t,
      script,
      { APPROVALS_URL: t.url, APPROVALS_KEY: key, OPENAI_API_KEY: '' },
      (pid) => `openai-agents:billing-bot:call_readme_${pid}`,
    );
    assert.match(out, new RegExp(`Waiting for approval: ${t.url}/a/${holdId}`));
    assert.match(out, /send_invoice: approved/);
    assert.match(out, /the tool said: Invoice of 1200 EUR sent to C-1042\./);
  });
});
