/**
 * An MCP server written for the server scenarios of the MCP conformance suite
 * (`@modelcontextprotocol/conformance`): every tool, resource, resource template, prompt and completion
 * they ask for by name, answering what their checks look for. It stands in for the suite's own
 * reference server, which its npm package does not ship, so that the suite can run in CI directly
 * against it and through the proxy (test/mcp-conformance.test.ts, docs/mcp-conformance.md).
 *
 * It speaks 2025-era streamable HTTP with sessions, as the suite's client does: one `Server` and one
 * transport per session, each with its own standalone GET stream, which is where this server asks its
 * client for sampling and elicitation (see `ask`).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import {
  localhostHostValidation,
  localhostOriginValidation,
  NodeStreamableHTTPServerTransport,
} from '@modelcontextprotocol/node';
import {
  type CallToolResult,
  type ElicitRequestFormParams,
  type GetPromptResult,
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  ResourceNotFoundError,
  Server,
  type ServerContext,
  type Tool,
  UriTemplate,
} from '@modelcontextprotocol/server';

/** A 1×1 red PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
/** A WAV file with no samples (8 kHz, 16-bit mono): only its 44-byte header. */
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';

const text = (value: string) => ({ type: 'text' as const, text: value });
const image = { type: 'image' as const, data: PNG, mimeType: 'image/png' };
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ConformanceTool {
  name: string;
  description: string;
  inputSchema: Tool['inputSchema'];
  run(
    args: Record<string, unknown>,
    context: ServerContext,
    server: Server,
  ): CallToolResult | Promise<CallToolResult>;
}

const NO_ARGUMENTS = { type: 'object' as const, properties: {} };

/** The fields of an elicitation form. */
type Fields = ElicitRequestFormParams['requestedSchema']['properties'];

/**
 * Asks the session's client with a request related to no call, as the suite's reference server does
 * (`server.request(...)`), since that is the path the proxy must relay. What a handler sends through
 * its context (`context.mcpReq.elicitInput`, `requestSampling`) the SDK relates to the call, and the
 * transport writes it on that call's own answer stream. Sent through the session's `Server` itself, a
 * request carries no related request id, and the transport writes it on the session's standalone GET
 * stream. (Were that stream not open, the transport would have nowhere to write it; the suite's
 * client, like the proxy upstream, opens it as soon as it connects.)
 */
const ask = {
  sampling: (server: Server, prompt: string) =>
    server.createMessage({ messages: [{ role: 'user', content: text(prompt) }], maxTokens: 100 }),
  elicitation: (server: Server, message: string, properties: Fields, required?: string[]) =>
    server.elicitInput({ message, requestedSchema: { type: 'object', properties, required } }),
};

/** One tool a scenario calls; `tools-list` checks that each has a name, a description and a schema. */
const TOOLS: ConformanceTool[] = [
  {
    // tools-call-simple-text
    name: 'test_simple_text',
    description: 'Answers with one text item',
    inputSchema: NO_ARGUMENTS,
    run: () => ({ content: [text('This is a simple text response for testing.')] }),
  },
  {
    // tools-call-image
    name: 'test_image_content',
    description: 'Answers with a PNG image',
    inputSchema: NO_ARGUMENTS,
    run: () => ({ content: [image] }),
  },
  {
    // tools-call-audio: the check wants `audio/wav` exactly.
    name: 'test_audio_content',
    description: 'Answers with a WAV sound',
    inputSchema: NO_ARGUMENTS,
    run: () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
  },
  {
    // tools-call-embedded-resource
    name: 'test_embedded_resource',
    description: 'Answers with an embedded text resource',
    inputSchema: NO_ARGUMENTS,
    run: () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ],
    }),
  },
  {
    // tools-call-mixed-content: text, image and resource in one answer.
    name: 'test_multiple_content_types',
    description: 'Answers with text, an image and an embedded resource',
    inputSchema: NO_ARGUMENTS,
    run: () => ({
      content: [
        text('Multiple content types test:'),
        image,
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 }),
          },
        },
      ],
    }),
  },
  {
    // tools-call-with-logging: three messages at info, apart in time, while the call runs.
    name: 'test_tool_with_logging',
    description: 'Logs three messages while it runs',
    inputSchema: NO_ARGUMENTS,
    async run(_args, context) {
      await context.mcpReq.log('info', 'Tool execution started');
      await pause(50);
      await context.mcpReq.log('info', 'Tool processing data');
      await pause(50);
      await context.mcpReq.log('info', 'Tool execution completed');
      return { content: [text('Logged three messages')] };
    },
  },
  {
    // tools-call-error: a tool error is a result with `isError`, not a JSON-RPC error.
    name: 'test_error_handling',
    description: 'Always fails',
    inputSchema: NO_ARGUMENTS,
    run: () => ({ isError: true, content: [text('This tool intentionally returns an error for testing')] }),
  },
  {
    // tools-call-with-progress: 0, 50, 100 of 100, to the progress token the call carries.
    name: 'test_tool_with_progress',
    description: 'Reports progress while it runs',
    inputSchema: NO_ARGUMENTS,
    async run(_args, context) {
      const progressToken = context.mcpReq._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await pause(50);
        if (progressToken !== undefined)
          await context.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100 },
          });
      }
      return { content: [text('Reported progress 0, 50 and 100 of 100')] };
    },
  },
  {
    // tools-call-sampling
    name: 'test_sampling',
    description: 'Asks the client for an LLM completion of the prompt',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    async run(args, _context, server) {
      const answer = await ask.sampling(server, String(args.prompt));
      const content = Array.isArray(answer.content) ? answer.content[0] : answer.content;
      return { content: [text(`LLM response: ${content?.type === 'text' ? content.text : ''}`)] };
    },
  },
  {
    // tools-call-elicitation
    name: 'test_elicitation',
    description: 'Asks the user for a user name and an email address',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    async run(args, _context, server) {
      const answer = await ask.elicitation(
        server,
        String(args.message),
        {
          username: { type: 'string', description: "User's response" },
          email: { type: 'string', description: "User's email address" },
        },
        ['username', 'email'],
      );
      return { content: [text(`User response: ${JSON.stringify(answer)}`)] };
    },
  },
  {
    // elicitation-sep1034-defaults: a default for each primitive type.
    name: 'test_elicitation_sep1034_defaults',
    description: 'Asks the user for values that all have defaults',
    inputSchema: NO_ARGUMENTS,
    async run(_args, _context, server) {
      const answer = await ask.elicitation(server, 'Please confirm or change these values', {
        name: { type: 'string', default: 'John Doe' },
        age: { type: 'integer', default: 30 },
        score: { type: 'number', default: 95.5 },
        status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
        verified: { type: 'boolean', default: true },
      });
      return { content: [text(elicited(answer))] };
    },
  },
  {
    // elicitation-sep1330-enums: the five shapes of an enum, single and multiple choice.
    name: 'test_elicitation_sep1330_enums',
    description: 'Asks the user to choose among enums of every shape',
    inputSchema: NO_ARGUMENTS,
    async run(_args, _context, server) {
      const answer = await ask.elicitation(server, 'Please choose', {
        untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
        titledSingle: {
          type: 'string',
          oneOf: [
            { const: 'value1', title: 'First Option' },
            { const: 'value2', title: 'Second Option' },
          ],
        },
        legacyEnum: {
          type: 'string',
          enum: ['opt1', 'opt2', 'opt3'],
          enumNames: ['Option One', 'Option Two', 'Option Three'],
        },
        untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: {
          type: 'array',
          items: {
            anyOf: [
              { const: 'value1', title: 'First Choice' },
              { const: 'value2', title: 'Second Choice' },
            ],
          },
        },
      });
      return { content: [text(elicited(answer))] };
    },
  },
];

function elicited(answer: { action: string; content?: unknown }): string {
  return `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;
}

/** The resources `resources-list` lists and `resources-read-*` read; `resources-subscribe` watches the last. */
const RESOURCES: {
  uri: string;
  name: string;
  description: string;
  read: ReadResourceResult['contents'][0];
}[] = [
  {
    uri: 'test://static-text',
    name: 'Static text',
    description: 'A text resource',
    read: {
      uri: 'test://static-text',
      mimeType: 'text/plain',
      text: 'This is the content of the static text resource.',
    },
  },
  {
    uri: 'test://static-binary',
    name: 'Static binary',
    description: 'A PNG image',
    read: { uri: 'test://static-binary', mimeType: 'image/png', blob: PNG },
  },
  {
    uri: 'test://watched-resource',
    name: 'Watched',
    description: 'A resource to subscribe to',
    read: { uri: 'test://watched-resource', mimeType: 'text/plain', text: 'Watched resource content.' },
  },
];

/** resources-templates-read: the id read must show in the content. */
const TEMPLATE = new UriTemplate('test://template/{id}/data');

/** One prompt a scenario gets; `prompts-list` checks that each has a name and a description. */
const PROMPTS: {
  name: string;
  description: string;
  arguments?: { name: string; description: string; required: boolean }[];
  messages(args: Record<string, string>): GetPromptResult['messages'];
}[] = [
  {
    // prompts-get-simple
    name: 'test_simple_prompt',
    description: 'A prompt without arguments',
    messages: () => [{ role: 'user', content: text('This is a simple prompt for testing.') }],
  },
  {
    // prompts-get-with-args, and completion-complete completes its arg1.
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    messages: ({ arg1, arg2 }) => [
      { role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) },
    ],
  },
  {
    // prompts-get-embedded-resource
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds the resource it is given',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    messages: ({ resourceUri = '' }) => [
      {
        role: 'user',
        content: {
          type: 'resource',
          resource: {
            uri: resourceUri,
            mimeType: 'text/plain',
            text: 'Embedded resource content for testing.',
          },
        },
      },
      { role: 'user', content: text('Please process the embedded resource above.') },
    ],
  },
  {
    // prompts-get-with-image
    name: 'test_prompt_with_image',
    description: 'A prompt with an image',
    messages: () => [
      { role: 'user', content: image },
      { role: 'user', content: text('Please analyze the image above.') },
    ],
  },
];

/** completion-complete: the same candidates for any argument, those that start with what was typed. */
const COMPLETIONS = ['paris', 'park', 'party', 'test', 'testing'];

/**
 * One session's server: the low-level `Server`, as the other test upstreams, so the tables above are
 * served as written (plain JSON schemas). Logging (`logging/setLevel`, a level per session) and `ping`
 * are the SDK's own.
 */
function conformanceServer(): Server {
  const server = new Server(
    { name: 'conformance-server', version: '1' },
    {
      capabilities: {
        tools: {},
        resources: { subscribe: true },
        prompts: {},
        completions: {},
        logging: {},
      },
    },
  );
  server.setRequestHandler('tools/list', () => ({
    tools: TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
  }));
  server.setRequestHandler('tools/call', (request, context) => {
    const tool = TOOLS.find((candidate) => candidate.name === request.params.name);
    if (!tool)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    return tool.run(request.params.arguments ?? {}, context, server);
  });

  server.setRequestHandler('resources/list', () => ({
    resources: RESOURCES.map(({ uri, name, description, read }) => ({
      uri,
      name,
      description,
      mimeType: read.mimeType,
    })),
  }));
  server.setRequestHandler('resources/templates/list', () => ({
    resourceTemplates: [
      {
        uriTemplate: TEMPLATE.toString(),
        name: 'Template data',
        description: 'Data for an id',
        mimeType: 'application/json',
      },
    ],
  }));
  server.setRequestHandler('resources/read', ({ params: { uri } }) => {
    const resource = RESOURCES.find((candidate) => candidate.uri === uri);
    if (resource) return { contents: [resource.read] };
    const id = TEMPLATE.match(uri)?.id;
    if (typeof id !== 'string') throw new ResourceNotFoundError(uri);
    const data = { id, templateTest: true, data: `Data for ID: ${id}` };
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
  });
  // Nothing here ever changes, so a subscription has no update to announce: both are only accepted.
  server.setRequestHandler('resources/subscribe', () => ({}));
  server.setRequestHandler('resources/unsubscribe', () => ({}));

  server.setRequestHandler('prompts/list', () => ({
    prompts: PROMPTS.map(({ name, description, arguments: args }) => ({
      name,
      description,
      arguments: args,
    })),
  }));
  server.setRequestHandler('prompts/get', ({ params }) => {
    const prompt = PROMPTS.find((candidate) => candidate.name === params.name);
    if (!prompt) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Prompt ${params.name} not found`);
    return { messages: prompt.messages(params.arguments ?? {}) };
  });
  server.setRequestHandler('completion/complete', ({ params }) => {
    const values = COMPLETIONS.filter((value) => value.startsWith(params.argument.value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

/**
 * Starts the server on a free loopback port. It refuses (403) a request whose Host or Origin is not
 * loopback, as `dns-rebinding-protection` wants. `close` ends every session.
 */
export async function startConformanceServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();
  const hostIsLocal = localhostHostValidation();
  const originIsLocal = localhostOriginValidation();

  /** A new session's server and transport; kept once its `initialize` is answered. */
  async function open(): Promise<NodeStreamableHTTPServerTransport> {
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void sessions.set(id, transport),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await conformanceServer().connect(transport);
    return transport;
  }

  const server = http.createServer(async (request, response) => {
    if (!hostIsLocal(request, response) || !originIsLocal(request, response)) return;
    const id = request.headers['mcp-session-id'];
    if (typeof id === 'string' && !sessions.has(id)) {
      response
        .writeHead(404, { 'Content-Type': 'application/json' })
        .end(
          JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }),
        );
      return;
    }
    // Without a session id only an `initialize` opens one: the transport answers anything else 400
    // (the proxy's probe for a 2026-era server among them), and that server is closed again.
    const transport = typeof id === 'string' ? sessions.get(id)! : await open();
    await transport.handleRequest(request, response);
    if (!transport.sessionId) await transport.close();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      sessions.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
