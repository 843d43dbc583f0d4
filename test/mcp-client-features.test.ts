/**
 * MCP client features through the proxy: what an upstream asks a client while it handles a tool
 * call (sampling, elicitation, roots) reaches the client that made the call, and the client's answer
 * (or error) reaches the upstream (docs/mcp.md, "Client features"), on both backends: requests sent
 * on a call's own stream, several calls at once, a client that cancels, a client that cannot answer,
 * roots outside a call, a 2026-era upstream that asks through `input_required` results, and a
 * 2026-era client, which takes no requests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, type ClientCapabilities, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CLIENT_FEATURES } from '../src/mcp/upstream.ts';
import { backends } from './support/backends.ts';
import {
  type AskingUpstream,
  type EverythingUpstream,
  startAskingUpstream,
  startEverything,
  startTap,
} from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';

/** The names of the tools an upstream lists to a client that declares what the proxy declares. */
async function toolsOf(url: string): Promise<string[]> {
  const client = new Client(
    { name: 'mcp-conformance-test', version: '1' },
    { capabilities: CLIENT_FEATURES },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  await client.close();
  return tools;
}

/** A workspace file whose servers have every tool classified allow (a new tool is held). */
function allowAll(servers: { slug: string; name: string; url: string; tools: string[] }[]): string {
  return JSON.stringify({
    members: [{ email: 'admin@acme.test', name: 'Admin', role: 'admin' }],
    mcp_servers: servers.map(({ slug, name, url }) => ({ slug, name, url })),
    tools: servers.flatMap(({ name, tools }) =>
      tools.map((tool) => ({ connection: name, tool, classification: 'allow' })),
    ),
  });
}

/** What the client is asked for in a sampling request. */
interface Sampled {
  messages: { role: string; content: { type: string; text?: string } }[];
  systemPrompt?: string;
}

for (const backend of backends) {
  describe(
    `MCP client features through the proxy on ${backend.name}`,
    { skip: backend.skip, timeout: 60_000 },
    () => {
      let t: TestService;
      let everything: EverythingUpstream;
      let asking: AskingUpstream;
      let config: string;
      const clients: Client[] = [];

      before(async () => {
        [everything, asking] = await Promise.all([startEverything(), startAskingUpstream()]);
        config = allowAll([
          {
            slug: 'everything',
            name: 'Everything',
            url: everything.url,
            tools: await toolsOf(everything.url),
          },
          { slug: 'asking', name: 'Asking', url: asking.url, tools: ['ask'] },
        ]);
        t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      });

      after(async () => {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
        await Promise.all([everything?.stop(), asking?.close()]);
      });

      /** A client of the proxy: 2025-era unless asked otherwise, with what it declares. */
      async function connect(
        key: string,
        slug: string,
        capabilities: ClientCapabilities = {},
        mode: 'legacy' | 'auto' = 'legacy',
      ) {
        const client = new Client(
          { name: 'mcp-test', version: '1' },
          { capabilities, versionNegotiation: { mode } },
        );
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/${slug}`), {
            requestInit: { headers: { Authorization: `Bearer ${key}` } },
          }),
        );
        clients.push(client);
        return client;
      }

      const text = (result: unknown) =>
        ((result as { content: { text?: string }[] }).content ?? [])
          .map((item) => item.text ?? '')
          .join('\n');

      test("sampling on the call's own stream: the client of the call answers the upstream", async () => {
        const { key } = await t.workspace({ config });
        const client = await connect(key, 'everything', { sampling: {} });
        const asked: Sampled[] = [];
        client.setRequestHandler('sampling/createMessage', (request) => {
          asked.push(request.params as Sampled);
          return {
            model: 'test-model',
            role: 'assistant' as const,
            content: { type: 'text' as const, text: 'Hello from the client' },
          };
        });
        const result = await client.callTool({
          name: 'trigger-sampling-request',
          arguments: { prompt: 'hi' },
        });
        assert.equal(asked.length, 1);
        assert.equal(asked[0]!.messages[0]!.content.text, 'Resource trigger-sampling-request context: hi');
        assert.equal(asked[0]!.systemPrompt, 'You are a helpful test server.');
        assert.match(text(result), /Hello from the client/);
        assert.match(text(result), /test-model/);
      });

      test('two calls at once: each client is asked what its own call needs', async () => {
        const { key } = await t.workspace({ config });
        const [first, second] = await Promise.all([
          connect(key, 'everything', { sampling: {} }),
          connect(key, 'everything', { sampling: {} }),
        ]);
        // Neither answers before both were asked: both calls are in flight together.
        let release!: () => void;
        const bothAsked = new Promise<void>((resolve) => (release = resolve));
        let waiting = 2;
        for (const [client, name] of [
          [first, 'first'],
          [second, 'second'],
        ] as const) {
          client.setRequestHandler('sampling/createMessage', async (request) => {
            if (--waiting === 0) release();
            await bothAsked;
            const prompt = (request.params as Sampled).messages[0]!.content.text;
            return {
              model: name,
              role: 'assistant' as const,
              content: { type: 'text' as const, text: `${name} answers ${prompt}` },
            };
          });
        }
        const [one, two] = await Promise.all([
          first.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'one' } }),
          second.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'two' } }),
        ]);
        assert.match(text(one), /first answers Resource trigger-sampling-request context: one/);
        assert.match(text(two), /second answers Resource trigger-sampling-request context: two/);
      });

      test('a client that cancels its call while it is asked: the request to it is cancelled too', async () => {
        const { key } = await t.workspace({ config });
        const client = await connect(key, 'everything', { sampling: {} });
        let asked!: () => void;
        const wasAsked = new Promise<void>((resolve) => (asked = resolve));
        let cancelled!: () => void;
        const wasCancelled = new Promise<void>((resolve) => (cancelled = resolve));
        client.setRequestHandler('sampling/createMessage', (_request, context) => {
          context.mcpReq.signal.addEventListener('abort', () => cancelled(), { once: true });
          asked();
          return new Promise<never>(() => undefined);
        });
        const stop = new AbortController();
        const call = client.callTool(
          { name: 'trigger-sampling-request', arguments: { prompt: 'hi' } },
          { signal: stop.signal },
        );
        await wasAsked;
        stop.abort();
        await assert.rejects(call);
        await wasCancelled;
      });

      test("a client that cannot answer: its error goes back to the upstream's tool", async () => {
        const { key } = await t.workspace({ config });
        // It declares no sampling and has no handler: it answers -32601 itself.
        const client = await connect(key, 'everything');
        const result = (await client.callTool({
          name: 'trigger-sampling-request',
          arguments: { prompt: 'hi' },
        })) as {
          isError?: boolean;
        };
        assert.equal(result.isError, true);
        assert.match(text(result), /-32601|Method not found/);
      });

      test('roots/list outside any call: the proxy answers that there are no roots', async () => {
        // Between the proxy and server-everything: to see the answer arrive there.
        const tap = await startTap(everything.url);
        try {
          const { key } = await t.workspace({ config: config.replaceAll(everything.url, tap.url) });
          const client = await connect(key, 'everything', { roots: {} });
          let asked = 0;
          client.setRequestHandler('roots/list', () => {
            asked += 1;
            return { roots: [{ uri: 'file:///work', name: 'work' }] };
          });
          // server-everything asks for roots 350 ms after its client (the proxy) initialized, and
          // keeps the answer; asked during a call instead, the question would go to this client.
          await client.listTools();
          await tap.passed('the answer to roots/list', (body) => Array.isArray(body?.result?.roots));
          const result = await client.callTool({ name: 'get-roots-list', arguments: {} });
          assert.equal(asked, 0);
          assert.match(text(result), /no roots are currently configured/);
        } finally {
          await tap.close();
        }
      });

      test('a 2026-era upstream asks through input_required: roots, sampling and a form from the client', async () => {
        const { key } = await t.workspace({ config });
        const client = await connect(key, 'asking', { roots: {}, sampling: {}, elicitation: { form: {} } });
        client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
        client.setRequestHandler('sampling/createMessage', () => ({
          model: 'test-model',
          role: 'assistant' as const,
          content: { type: 'text' as const, text: 'hi' },
        }));
        client.setRequestHandler('elicitation/create', () => ({
          action: 'accept' as const,
          content: { name: 'Ada' },
        }));
        const roots = JSON.parse(text(await client.callTool({ name: 'ask', arguments: { kind: 'roots' } })));
        assert.deepEqual(roots, { kind: 'roots', roots: [{ uri: 'file:///work', name: 'work' }] });
        const sampled = JSON.parse(
          text(await client.callTool({ name: 'ask', arguments: { kind: 'sampling' } })),
        );
        assert.equal(sampled.kind, 'sampling');
        assert.equal(sampled.result.content.text, 'hi');
        const form = JSON.parse(text(await client.callTool({ name: 'ask', arguments: { kind: 'elicit' } })));
        assert.deepEqual(form, { kind: 'elicit', action: 'accept', content: { name: 'Ada' } });
      });

      test('a 2026-era client takes no requests: the upstream is told it has none of these features', async () => {
        const { key } = await t.workspace({ config });
        const client = await connect(key, 'asking', { roots: {} }, 'auto');
        client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
        const error = await client.callTool({ name: 'ask', arguments: { kind: 'roots' } }).then(
          (value) => assert.fail(`expected an error, got ${JSON.stringify(value)}`),
          (failure: { code?: number; message?: string }) => failure,
        );
        assert.equal(error.code, -32021, error.message);
      });
    },
  );
}
