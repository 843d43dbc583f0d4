/**
 * npm run check:layers: the layers of src/ (docs/architecture.md, "Layers") hold, each imports only the
 * packages on its list, the published packages under packages/ import only what their package.json
 * names, and no module imports itself back through others. Reads every non-test .ts file under src/
 * and packages/<name>/src/ with the TypeScript parser, resolves its relative imports (static,
 * re-exports and dynamic `import()`), and fails with a list of every import a layer or package may not
 * make and every import circle, one cycle printed for each.
 *
 * Type-only imports (`import type …`, `export type … from`, and `import('…')` in a type) carry no I/O
 * and vanish when types are stripped, so they cannot close a circle at run time: the circle check leaves
 * them out. They still count for the layer rules (a transport that types its data with the store's port
 * is shaped by the store), with one exception: the records the services hand up as the store reads them
 * (a workspace, a hold line, an MCP server) are genuinely shared, and the layers above the services may
 * name those types, each listed in SHARED_RECORD_TYPES. `import { type A }` (no `type` before the brace)
 * keeps a side-effect import under `verbatimModuleSyntax`, so it counts as a runtime import.
 *
 * Run on another tree (the test's fixtures) with `node scripts/check-layers.ts <root>`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

// ---------------------------------------------------------------------------------------------------
// The rules. A file belongs to the first layer with a path it starts with (paths from the project root).
// `may`: the layers it may import (its own always). `packages`: if given, the only packages (and
// `node:` modules) it may import.
// ---------------------------------------------------------------------------------------------------

interface Layer {
  name: string;
  paths: string[];
  may: string[];
  packages?: string[];
  why: string;
}

export const LAYERS: Layer[] = [
  {
    name: 'root',
    paths: ['src/main.ts', 'src/runtime.ts', 'src/open-context.ts', 'src/compile-cache.ts'],
    may: ['*'],
    why: 'the composition root: builds storage, services, transports and workers from the settings',
  },
  {
    name: 'sdk',
    paths: ['packages/sdk/src/'],
    may: [],
    why: "the SDK's canonical JSON and chain rules: pure, dependency-free, shared with auditors",
  },
  {
    name: 'domain',
    paths: ['src/domain/'],
    may: ['sdk'],
    packages: ['re2js'],
    why: 'pure: no I/O, no node: modules, no frameworks',
  },
  {
    name: 'markup',
    paths: ['src/markup/'],
    may: [],
    packages: [],
    why: 'the escaping HTML template, pure; shared by the app, the server-rendered pages and the e-mails',
  },
  {
    name: 'net',
    paths: ['src/net/'],
    may: ['telemetry'],
    packages: ['node:dns', 'node:dns/promises', 'node:net', 'ipaddr.js', 'undici'],
    why: 'the one HTTP client for requests sent out, and the internal-address guard it applies',
  },
  {
    name: 'telemetry',
    paths: ['src/telemetry/'],
    may: ['store'],
    packages: [
      '@opentelemetry/api',
      '@opentelemetry/context-async-hooks',
      '@opentelemetry/core',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/exporter-trace-otlp-proto',
      '@opentelemetry/resources',
      '@opentelemetry/sdk-trace',
      // Fastify's and Node's server types, for the request spans.
      'fastify',
      'node:http',
    ],
    why: 'traces (OpenTelemetry): the SDK started from the settings, and the spans of the choke points',
  },
  {
    name: 'store',
    paths: ['src/store/'],
    may: ['sdk', 'domain'],
    packages: [
      'node:crypto',
      'node:fs',
      'node:fs/promises',
      'node:path',
      'node:sqlite',
      'node:worker_threads',
      'pg',
    ],
    why: 'storage: the port, its adapters, one module per table; nothing above it',
  },
  {
    name: 'channels',
    paths: ['src/channels/'],
    may: ['sdk', 'domain', 'markup', 'net', 'telemetry'],
    packages: ['node:crypto', 'nodemailer'],
    why: 'outbound messages: their texts and the e-mail, Slack and SMS clients; services send through them',
  },
  {
    name: 'services',
    paths: ['src/services/'],
    may: ['sdk', 'domain', 'store', 'channels', 'net', 'settings', 'telemetry'],
    packages: [
      '@simplewebauthn/server',
      'ipaddr.js',
      // Receipts: the hold's signed JWS (receipts.ts).
      'jose',
      'node:async_hooks',
      'node:crypto',
      'node:fs',
      'node:path',
      'node:timers/promises',
      'oidc-provider',
      // Sign-in with a workspace's identity provider (oidc.ts).
      'openid-client',
      'yaml',
      'zod',
    ],
    why: 'the use cases and their transactions; no HTTP, HTML or app code',
  },
  {
    name: 'reports',
    paths: ['src/reports/'],
    may: ['sdk', 'domain', 'services'],
    packages: ['node:stream', 'node:zlib', 'pdfkit'],
    why: "renders the reports service's figures as CSV and PDF",
  },
  {
    name: 'webhooks',
    paths: ['src/webhooks/'],
    may: ['domain', 'services', 'net'],
    packages: [],
    why: 'sends webhook deliveries for the webhook worker, through the guarded HTTP client',
  },
  {
    name: 'web',
    paths: ['src/web/'],
    may: ['sdk', 'domain', 'services', 'reports'],
    packages: [
      'fastify',
      'node:crypto',
      'node:http',
      'node:net',
      'node:stream',
      'prom-client',
      'redis',
      'zod',
    ],
    why: 'what the transports stand on: the Fastify server, the guard, errors, rate limiter and metrics',
  },
  {
    name: 'http',
    paths: ['src/http/'],
    may: ['sdk', 'domain', 'markup', 'services', 'channels', 'web'],
    packages: ['fastify', 'marked', 'node:fs', 'node:fs/promises', 'yaml', 'zod'],
    why: 'the Core API and the service pages (status, docs, widget, channel callbacks)',
  },
  {
    name: 'oauth',
    paths: ['src/oauth/'],
    may: ['markup', 'services', 'web'],
    packages: ['fastify', 'node:crypto', 'node:http', 'oidc-provider'],
    why: 'the OAuth authorization server for MCP clients',
  },
  {
    name: 'app',
    paths: ['src/app/'],
    may: ['sdk', 'domain', 'markup', 'services', 'web', 'oauth'],
    packages: ['fastify', 'node:fs', 'node:http', 'node:stream', 'oidc-provider', 'zod'],
    why: 'the web app, on the web layer (and the OAuth server, for its consent page)',
  },
  {
    name: 'mcp',
    paths: ['src/mcp/'],
    may: ['domain', 'services', 'web', 'net', 'telemetry'],
    packages: [
      '@modelcontextprotocol/client',
      '@modelcontextprotocol/server',
      'fastify',
      'node:async_hooks',
      'node:crypto',
      'node:http',
      'node:stream',
      'zod',
    ],
    why: 'the MCP endpoint and upstream pool, on the web layer',
  },
  {
    name: 'workers',
    paths: ['src/workers/'],
    may: ['domain', 'services', 'webhooks'],
    // Fastify's logger type, which the runtime hands the workers.
    packages: ['fastify'],
    why: 'background loops over services',
  },
  {
    name: 'cli',
    paths: ['src/cli/'],
    may: ['sdk', 'domain', 'services', 'settings', 'root', 'store-migrations'],
    why: 'the approvals command: a transport over services, built by the runtime',
  },
];

/**
 * Single modules, each a layer of its own: some layers may import them although their folder is out of
 * reach. A file named here belongs to this entry; whoever may import its folder may import it too.
 */
export const SINGLES: Layer[] = [
  {
    name: 'settings',
    paths: ['src/config.ts'],
    may: [],
    packages: ['node:fs', 'node:net', 'zod'],
    why: 'the settings, read once by the root and the CLI; services read their limits (MAX_RATE_LIMIT)',
  },
  {
    name: 'store-migrations',
    paths: ['src/store/migrate.ts', 'src/store/open.ts'],
    may: ['store'],
    packages: ['node:fs', 'node:path'],
    why: '`approvals migrate` opens the database and runs the migrations, as the runtime does',
  },
];

/**
 * Records the store reads and the services return as they are: layers that may import the services may
 * name these types (`import type` only, these names only).
 */
export const SHARED_RECORD_TYPES: { module: string; types: string[] }[] = [
  { module: 'src/store/workspaces.ts', types: ['Workspace'] },
  { module: 'src/store/members.ts', types: ['Role'] },
  { module: 'src/store/hold-lines.ts', types: ['HoldLine', 'HoldFilters'] },
  { module: 'src/store/hold-decisions.ts', types: ['HoldDecisionRow'] },
  { module: 'src/store/notifications.ts', types: ['EmbedTokenSummary'] },
  { module: 'src/store/mcp-servers.ts', types: ['McpServer'] },
  { module: 'src/store/tools.ts', types: ['Tool'] },
  { module: 'src/store/webhooks.ts', types: ['WebhookEndpoint'] },
];

/**
 * Imports that break a rule and are being moved, each `from -> to` (paths from the project root), with
 * the issue that moves them. Entries that no longer occur fail the check, so the list only shrinks.
 */
export const TEMPORARILY_ALLOWED: { from: string; to: string; why: string }[] = [];

/**
 * The packages under packages/ are published on their own: a file under a package's src/ may import its
 * own package's files, `node:` modules and the packages its package.json names (dependencies, peer and
 * optional ones). These name none: what they import is theirs alone.
 */
export const DEPENDENCY_FREE = ['packages/sdk'];

// ---------------------------------------------------------------------------------------------------

export interface Import {
  from: string;
  to: string; // a project path, or a package name
  /** A relative import, resolved to a project path. */
  local: boolean;
  typeOnly: boolean;
  /** What a type-only import names (`*` for a namespace or default import). */
  names: string[];
}

const isTest = (path: string) => path.endsWith('.test.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !isTest(entry.name) ? [path] : [];
  });
}

const packageName = (specifier: string) =>
  specifier.startsWith('node:')
    ? specifier
    : specifier
        .split('/')
        .slice(0, specifier.startsWith('@') ? 2 : 1)
        .join('/');

/** Every import of one file, relative ones resolved to project paths (forward slashes). */
export function importsOf(root: string, file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const from = relative(root, file).split(sep).join('/');
  const found: Import[] = [];
  const add = (specifier: string, typeOnly: boolean, names: string[] = ['*']) => {
    const to = specifier.startsWith('.')
      ? relative(root, resolve(dirname(file), specifier))
          .split(sep)
          .join('/')
      : packageName(specifier);
    found.push({ from, to, typeOnly, names, local: specifier.startsWith('.') });
  };
  const named = (bindings: ts.NamedImportBindings | ts.NamedExportBindings | undefined) =>
    bindings && (ts.isNamedImports(bindings) || ts.isNamedExports(bindings))
      ? bindings.elements.map((element) => (element.propertyName ?? element.name).text)
      : ['*'];
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      add(
        node.moduleSpecifier.text,
        clause?.isTypeOnly ?? false,
        clause?.name ? ['*'] : named(clause?.namedBindings),
      );
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly, named(node.exportClause));
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, false);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      const qualifier = node.qualifier && ts.isIdentifier(node.qualifier) ? node.qualifier.text : '*';
      add(node.argument.literal.text, true, [qualifier]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function layerOf(path: string): Layer | undefined {
  return [...SINGLES, ...LAYERS].find((layer) =>
    layer.paths.some((prefix) => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix)),
  );
}

/** The rule an import breaks, or null. */
function brokenRule(link: Import): string | null {
  const from = layerOf(link.from);
  if (!from) return `${link.from} is in no layer (add its folder to LAYERS)`;
  const isPackage = !link.to.startsWith('src/') && !link.to.startsWith('packages/');
  if (isPackage) {
    if (!from.packages || from.packages.includes(link.to)) return null;
    return `${from.name} may import only ${from.packages.join(', ') || 'no packages'}`;
  }
  const to = layerOf(link.to);
  if (!to) return `${link.to} is in no layer (add its folder to LAYERS)`;
  if (to === from || from.may.includes('*') || from.may.includes(to.name)) return null;
  const shared = SHARED_RECORD_TYPES.find((entry) => entry.module === link.to);
  if (link.typeOnly && shared && from.may.includes('services')) {
    const others = link.names.filter((name) => !shared.types.includes(name));
    if (others.length === 0) return null;
    return `${from.name} may name only the shared record types of ${link.to} (not ${others.join(', ')})`;
  }
  // A single module belongs to its folder's layer too: whoever may import the folder may import it.
  const folder = LAYERS.find((layer) => layer.paths.some((prefix) => link.to.startsWith(prefix)));
  if (folder && (folder === from || from.may.includes(folder.name))) return null;
  return `${from.name} may not import ${to.name} (${from.name} may import: ${from.may.join(', ') || 'nothing'})`;
}

/** A published package under packages/: its folder, and the packages its package.json names. */
interface PublishedPackage {
  dir: string;
  dependencies: string[];
}

function publishedPackages(root: string): PublishedPackage[] {
  const top = join(root, 'packages');
  if (!existsSync(top)) return [];
  return readdirSync(top, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(top, entry.name, 'package.json')))
    .map((entry) => {
      const manifest = JSON.parse(readFileSync(join(top, entry.name, 'package.json'), 'utf8')) as Record<
        string,
        Record<string, string> | undefined
      >;
      const dependencies = ['dependencies', 'peerDependencies', 'optionalDependencies'].flatMap((field) =>
        Object.keys(manifest[field] ?? {}),
      );
      return { dir: `packages/${entry.name}`, dependencies };
    });
}

/** The rule an import of a published package's file breaks, or null. */
function brokenPackageRule(link: Import, pkg: PublishedPackage): string | null {
  if (link.local)
    return link.to.startsWith(`${pkg.dir}/`) ? null : `${pkg.dir} may import only its own files`;
  if (link.to.startsWith('node:') || pkg.dependencies.includes(link.to)) return null;
  return `${pkg.dir} may import only node: modules and what its package.json names (${pkg.dependencies.join(', ') || 'nothing'})`;
}

/** Strongly connected components of more than one file, or of a file that imports itself (Tarjan). */
export function circles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const connect = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of edges.get(node) ?? []) {
      if (!index.has(target)) {
        connect(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (edges.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) connect(node);
  return found;
}

/** One shortest cycle through the first file of a component, staying inside it. */
export function cycleThrough(component: string[], edges: Map<string, string[]>): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const target of edges.get(node) ?? []) {
      if (!inside.has(target)) continue;
      if (target === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start];
}

export interface LayerReport {
  violations: { from: string; to: string; typeOnly: boolean; rule: string }[];
  staleAllowances: string[];
  cycles: { files: string[]; cycle: string[] }[];
}

export function checkLayers(root: string, allowed = TEMPORARILY_ALLOWED): LayerReport {
  const packages = publishedPackages(root);
  const files = [
    ...sourceFiles(join(root, 'src')),
    ...packages.flatMap((pkg) =>
      existsSync(join(root, pkg.dir, 'src')) ? sourceFiles(join(root, pkg.dir, 'src')) : [],
    ),
  ];
  const imports = files.flatMap((file) => importsOf(root, file));
  const used = new Set<string>();
  const declared = packages
    .filter((pkg) => DEPENDENCY_FREE.includes(pkg.dir))
    .flatMap((pkg) =>
      pkg.dependencies.map((name) => ({
        from: `${pkg.dir}/package.json`,
        to: name,
        typeOnly: false,
        rule: `${pkg.dir} stays dependency-free`,
      })),
    );
  const violations = imports.flatMap((link) => {
    const pkg = packages.find((candidate) => link.from.startsWith(`${candidate.dir}/`));
    const rule = pkg ? brokenPackageRule(link, pkg) : brokenRule(link);
    if (!rule) return [];
    const allowance = allowed.find((entry) => entry.from === link.from && entry.to === link.to);
    if (allowance) {
      used.add(`${allowance.from} -> ${allowance.to}`);
      return [];
    }
    return [{ from: link.from, to: link.to, typeOnly: link.typeOnly, rule }];
  });
  const staleAllowances = allowed
    .map((entry) => `${entry.from} -> ${entry.to}`)
    .filter((entry) => !used.has(entry));
  const edges = new Map<string, string[]>();
  for (const file of files) edges.set(relative(root, file).split(sep).join('/'), []);
  for (const link of imports) {
    if (!link.typeOnly && edges.has(link.to)) edges.get(link.from)!.push(link.to);
  }
  const cycles = circles(edges).map((files) => ({ files, cycle: cycleThrough(files, edges) }));
  return { violations: [...violations, ...declared], staleAllowances, cycles };
}

export function listProblems(report: LayerReport): string[] {
  return [
    ...report.violations.map(
      (v) => `layer: ${v.from} imports ${v.to}${v.typeOnly ? ' (type only)' : ''}: ${v.rule}`,
    ),
    ...report.staleAllowances.map(
      (entry) => `allow-list: ${entry} no longer occurs; remove it from TEMPORARILY_ALLOWED`,
    ),
    ...report.cycles.map(
      ({ files, cycle }) =>
        `circle of ${files.length} files: ${cycle.join(' -> ')}` +
        (files.length > cycle.length - 1
          ? ` (also: ${files.filter((f) => !cycle.includes(f)).join(', ')})`
          : ''),
    ),
  ];
}

if (import.meta.main) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));
  if (!existsSync(join(root, 'src'))) throw new Error(`no src/ under ${root}`);
  const problems = listProblems(checkLayers(root));
  if (problems.length > 0) {
    console.error(`Layers: ${problems.length} problems\n${problems.map((p) => `  ${p}`).join('\n')}`);
    process.exitCode = 1;
  } else {
    console.log('Layers: every import follows the rules, no import circles');
  }
}
