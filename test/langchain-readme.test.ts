/**
 * The LangChain adapter's README example, run as written (issue 42: on the system's Node.js, in a
 * default `npm init -y` project with the packed packages, see support/readme-example.ts). Its model
 * package, `@langchain/openai`, is a stand-in there whose `ChatOpenAI` is LangChain's own scripted test
 * model (no network, no OpenAI key). The admin approves the hold it waits on; the example prints what
 * the README says it prints. And the package as users get it: its build and README only, no
 * dependencies, the Node.js it claims.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sqlite } from './support/backends.ts';
import { consumerProject, runApprovedExample } from './support/readme-example.ts';
import { startTestService, type TestService } from './support/service.ts';

const PACKAGE = new URL('../packages/langchain/', import.meta.url);
const readme = () => readFileSync(new URL('README.md', PACKAGE), 'utf8');

/** Stands in for OpenAI: asks for send_invoice once, then repeats what the tool answered. */
const STAND_IN_OPENAI = `
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
export class ChatOpenAI {
  constructor() {
    return fakeModel()
      .respondWithTools([{ name: 'send_invoice', args: { customer: 'C-1042', amount: 1200 } }])
      .respond((messages) => new AIMessage('the tool said: ' + messages.at(-1).text));
  }
}
`;

describe("the LangChain adapter's README", () => {
  let t: TestService;
  before(async () => {
    t = await startTestService(sqlite);
  });
  after(() => t?.close());

  test('its example runs as written and waits for the approver', async () => {
    const config = /```yaml\n([\s\S]*?)```/.exec(readme())![1]!;
    const script = readme().split('```js\n')[1]!.split('```')[0]!;
    const openai = join(await consumerProject(), 'node_modules/@langchain/openai');
    mkdirSync(openai, { recursive: true });
    writeFileSync(
      join(openai, 'package.json'),
      JSON.stringify({ name: '@langchain/openai', type: 'module' }),
    );
    writeFileSync(join(openai, 'index.js'), STAND_IN_OPENAI);

    const { key } = await t.workspace({ config });
    const { out, holdId } = await runApprovedExample(
      t,
      script,
      { APPROVALS_URL: t.url, APPROVALS_KEY: key, OPENAI_API_KEY: '' },
      // The interrupt id is LangGraph's; the thread's one review asks about one call.
      () => 'langchain:billing-bot:%:0',
    );
    assert.match(out, new RegExp(`Waiting for approval: ${t.url}/a/${holdId}`));
    assert.match(out, /send_invoice: approved/);
    assert.match(out, /the tool said: Invoice of 1200 EUR sent to C-1042\./);
  });

  test('the package: its build and README only, no dependencies, Node.js 20 as it says', async () => {
    const installed = join(await consumerProject(), 'node_modules/@approvals/langchain');
    assert.deepEqual(readdirSync(installed).sort(), ['README.md', 'dist', 'package.json']);
    assert.deepEqual(readdirSync(join(installed, 'dist')).sort(), ['index.d.ts', 'index.js']);
    const manifest = JSON.parse(readFileSync(new URL('package.json', PACKAGE), 'utf8'));
    assert.equal(manifest.dependencies, undefined, 'no dependencies, only peers');
    const built = readFileSync(join(installed, 'dist/index.js'), 'utf8');
    assert.deepEqual(
      [...built.matchAll(/^\s*import\s(?!type\s)[^;]*from '([^']+)'/gm)].map((match) => match[1]),
      ['@langchain/langgraph'],
      'at run time, only LangGraph (to resume the run)',
    );
    // What it needs is said where npm enforces it and where users read it; the settings are the CLI's.
    assert.equal(manifest.engines?.node, '>=20');
    assert.match(readme(), /Node\.js 20 or later/);
    assert.doesNotMatch(readme(), /APPROVALS_API_KEY|:3000/);
  });
});
