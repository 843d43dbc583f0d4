/**
 * Issue 22: past one PostgreSQL, workspaces are spread over Citus workers (distribution column
 * `workspace_id`) or routed to clusters of their own. That holds only while every table carries
 * `workspace_id` and every statement names the workspace it reads or writes. This test reads the schema
 * (every migration, both engines) and every SQL statement in src/, and checks both claims, except for the
 * tables and statements listed below, each with why: the same lists as docs/deployment.md, section
 * "Past one PostgreSQL", which says what each would take.
 *
 * A statement is any string or template literal in src/ (tests aside) that starts with a SQL keyword in
 * capitals (SELECT, INSERT, UPDATE, DELETE, WITH; CREATE, ALTER, DROP for tables made outside the
 * migrations). Its `${…}` parts are read where the TypeScript syntax tree says they come from:
 * a constant (`${columns}`), a variable built from literals (`${where}`), the body of a function it calls
 * (`${recentCallsCount(…)}`), in the same file or an imported one. A statement is scoped when it compares
 * `workspace_id` with a parameter (`workspace_id = $1`, `h.workspace_id = $1`) or inserts a
 * `workspace_id`. That is a check of the text, not a SQL parser: it sees the statement, not each table of
 * a join (see the docs for the joins that would also need `workspace_id`). The last test checks the
 * reader itself: that it resolves the forms used today, and that no SQL handed to the store escapes it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { listMigrations } from '../src/store/migrate.ts';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

// ---------------------------------------------------------------------------------------------------
// The allow-lists. Keep them in step with docs/deployment.md, "Past one PostgreSQL".
// ---------------------------------------------------------------------------------------------------

/**
 * Tables without `workspace_id`. `global`: shared by every workspace, so their statements are not
 * checked. `missing`: a workspace's rows that reach it only through a parent (a hold, a member, an
 * event); they need the column before they can be distributed, and their statements are checked.
 */
const TABLES_WITHOUT_WORKSPACE_ID: Record<string, { kind: 'global' | 'missing'; reason: string }> = {
  workspaces: {
    kind: 'global',
    reason:
      'the directory of workspaces: its id is the workspace id (Citus: a reference table; clusters: the routing table)',
  },
  signing_keys: {
    kind: 'global',
    reason: 'the evidence signing keys of the service, used by every workspace (a reference table)',
  },
  rate_windows: {
    kind: 'global',
    reason:
      'rate-limit counts keyed by address, API key or workspace; never joined (REDIS_URL, or distributed by its own key)',
  },
  schema_migrations: {
    kind: 'global',
    reason: 'which migrations this database has: one per database, not data',
  },
  oauth_records: {
    kind: 'global',
    reason:
      "the OAuth server's own objects (registered clients, codes, tokens), keyed by the library's ids; a token reaches its workspace through oauth_grants (a reference table, or distributed by its own key)",
  },
  webauthn_challenges: {
    kind: 'global',
    reason:
      'one-time challenges of passkey ceremonies, made before a sign-in knows its member or workspace; minutes long',
  },
  service_settings: {
    kind: 'global',
    reason:
      'what the running service says about itself (its public URL) for the command line on the same storage',
  },
  hold_decisions: { kind: 'missing', reason: "a member's decision on a hold, reached by hold_id" },
  login_tokens: { kind: 'missing', reason: "a member's sign-in link, reached by its hash or member_id" },
  decision_tokens: { kind: 'missing', reason: "a member's decision link on a hold, reached by its hash" },
  webhook_attempts: {
    kind: 'missing',
    reason: "the delivery log of a workspace's event, reached by event_id",
  },
  inbound_replays: {
    kind: 'missing',
    reason: 'replay keys of Slack and SMS decisions, written in the decision transaction of a workspace',
  },
};

type StatementKind = 'worker' | 'secret' | 'person' | 'by id';

/**
 * Functions whose statements read or write a workspace's rows without naming the workspace, in groups
 * with why, each with how many such statements it issues (a new one in a listed function fails too).
 * `worker`: a job that sweeps every workspace. `secret`: a lookup by a token's hash or a random reference,
 * before the workspace is known. `person`: an e-mail address or phone number, across the workspaces a
 * person belongs to. `by id`: a row the caller found through its workspace, which it only needs to pass on.
 */
const UNSCOPED_STATEMENTS: { kind: StatementKind; reason: string; functions: Record<string, number> }[] = [
  {
    kind: 'worker',
    reason: 'the deadline sweep: pending holds past their deadline in every workspace',
    functions: { listOverdueHolds: 1, nextDeadline: 1 },
  },
  {
    kind: 'worker',
    reason:
      'the follow-up sweep: reminders, escalation steps and handovers to delegates that came due, in every workspace',
    functions: { listDueFollowUps: 1, listDueHandovers: 1 },
  },
  {
    kind: 'worker',
    reason: "the digest sweep: members' digest windows that closed, in every workspace",
    functions: { listDueDigests: 1 },
  },
  {
    kind: 'worker',
    reason: 'the execution sweep of calls left running by a dead instance',
    functions: { listStaleExecutions: 1 },
  },
  {
    kind: 'worker',
    reason:
      'job claims: due notifications and webhook events of every workspace (a read whether any is due, then one UPDATE of the due rows FOR UPDATE SKIP LOCKED)',
    functions: { anyDue: 1, claimDue: 1 },
  },
  {
    kind: 'worker',
    reason:
      'the checkpoint worker: chains that moved past their last published checkpoint, paged by workspace',
    functions: { chainsToPublish: 1 },
  },
  {
    kind: 'worker',
    reason: '/readyz and the metric: the workspaces whose evidence chain is frozen, across all of them',
    functions: { frozenChains: 1 },
  },
  {
    kind: 'worker',
    reason:
      "the OAuth sweep: registered clients (global) that no workspace's grant in force names, 30 days after registering",
    functions: { deleteUnusedOAuthClients: 1 },
  },
  {
    kind: 'secret',
    reason:
      'the bearer token of every API request: its hash names the key, the key its workspace (and on PostgreSQL the window the request is counted in)',
    functions: { apiKeyByHash: 1, findApiKeyCountingHit: 1 },
  },
  {
    kind: 'secret',
    reason:
      'the OAuth access token of an MCP request: its hash names the token, the token its grant and workspace; and a grant the OAuth server revoked, by its id',
    functions: { findOAuthBearer: 1, findOAuthGrantWorkspace: 1 },
  },
  {
    kind: 'secret',
    reason: "the app's session cookie, on every app request and at sign-out",
    functions: { findSession: 1, deleteSession: 1 },
  },
  {
    kind: 'secret',
    reason: 'one-time links and tokens: sign-in links, decision links (/d/<token>), widget embed tokens',
    functions: { findLoginToken: 1, useLoginToken: 1, findDecisionToken: 1, findEmbedToken: 1 },
  },
  {
    kind: 'secret',
    reason:
      'signing in with a passkey: the credential id the authenticator answers with, before any workspace is known',
    functions: { findPasskeyForSignIn: 1 },
  },
  {
    kind: 'secret',
    reason:
      'a hold by its reference alone: the public status page, Slack buttons, SMS replies, notification jobs',
    functions: { findHoldByReference: 1 },
  },
  {
    kind: 'person',
    reason: 'signing in by e-mail address: every workspace the address is a member of',
    functions: { findMembershipsByEmail: 1 },
  },
  {
    kind: 'person',
    reason: 'an SMS reply: the members with this phone number and their open reply codes, in any workspace',
    functions: { findMemberIdsByPhone: 1, findSmsRequestByCode: 1, openReplyCodes: 1 },
  },
  {
    kind: 'by id',
    reason: "a hold's state and decisions, by hold id (hold_decisions has no workspace_id)",
    functions: {
      toLines: 1,
      insertHoldDecision: 1,
      listPastDecisions: 1,
      supersedeDecisions: 1,
      listHoldDecisions: 1,
      listDecisionsOfHolds: 1,
      activityPage: 1,
    },
  },
  {
    kind: 'by id',
    reason: "an API key by its id (the CLI revokes a key by id alone), and its workspace's MCP quota",
    functions: { findApiKey: 1, markApiKeyRevoked: 1 },
  },
  {
    kind: 'by id',
    reason: 'an MCP server or MCP session by its id',
    functions: {
      findMcpServer: 1,
      removeMcpServersExcept: 1,
      findMcpSession: 1,
      setMcpSessionLogLevel: 1,
      closeMcpSession: 1,
    },
  },
  {
    kind: 'by id',
    reason: "a member, and the member's ways in, by member id or token hash once the token was read",
    functions: {
      findMemberById: 1,
      removeMembersExcept: 2,
      endAccessOfMember: 1,
      insertLoginToken: 1,
      insertDecisionToken: 1,
      markDecisionTokenUsed: 1,
      touchEmbedToken: 1,
      deleteEmbedToken: 1,
    },
  },
  {
    kind: 'by id',
    reason: 'a notification job by its id or its hold, and the replay key of an inbound decision',
    functions: {
      findNotification: 1,
      listNotificationsOfHold: 1,
      finishNotification: 1,
      retryNotification: 2,
      postponeNotification: 1,
      rememberInbound: 2,
    },
  },
  {
    kind: 'by id',
    reason:
      'a webhook event by its id (claimed ones with their endpoints), and its attempts (webhook_attempts has no workspace_id)',
    functions: { findWebhookEvent: 1, findDeliveries: 1, recordAttempt: 2, listAttempts: 1 },
  },
];

// ---------------------------------------------------------------------------------------------------
// The schema: every migration of each engine, applied in order, plus tables made in src/ itself.
// ---------------------------------------------------------------------------------------------------

type Schema = Map<string, Set<string>>;

/** Applies one SQL script's DDL to `schema`; any ALTER TABLE it does not understand fails the test. */
function applyDdl(schema: Schema, script: string, where: string) {
  const statements = script
    .replace(/--.*$/gm, '')
    .split(';')
    .map((statement) => statement.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  for (const statement of statements) {
    let m: RegExpMatchArray | null;
    if ((m = statement.match(/^CREATE TABLE (?:IF NOT EXISTS )?(\w+) \((.*)\)$/i))) {
      schema.set(m[1]!, new Set(columnsOf(m[2]!)));
    } else if ((m = statement.match(/^ALTER TABLE (\w+) ADD COLUMN (\w+)/i))) {
      table(schema, m[1]!, where).add(m[2]!);
    } else if ((m = statement.match(/^ALTER TABLE (\w+) DROP COLUMN (\w+)$/i))) {
      table(schema, m[1]!, where).delete(m[2]!);
    } else if ((m = statement.match(/^ALTER TABLE (\w+) RENAME COLUMN (\w+) TO (\w+)$/i))) {
      const columns = table(schema, m[1]!, where);
      columns.delete(m[2]!);
      columns.add(m[3]!);
    } else if ((m = statement.match(/^ALTER TABLE (\w+) RENAME TO (\w+)$/i))) {
      schema.set(m[2]!, table(schema, m[1]!, where));
      schema.delete(m[1]!);
    } else if ((m = statement.match(/^DROP TABLE (?:IF EXISTS )?(\w+)$/i))) {
      schema.delete(m[1]!);
    } else if ((m = statement.match(/^ALTER TABLE (\w+) SET (?:UN)?LOGGED$/i))) {
      table(schema, m[1]!, where); // durability only: the columns stay
    } else if (/^(ALTER|CREATE|DROP) TABLE\b/i.test(statement)) {
      assert.fail(`${where}: this test does not understand "${statement}"; teach applyDdl`);
    }
  }
}

function table(schema: Schema, name: string, where: string): Set<string> {
  const columns = schema.get(name);
  assert.ok(columns, `${where}: table ${name} is altered before it is created`);
  return columns;
}

/** The column names of a CREATE TABLE body: its parts at the top level of parentheses, constraints aside. */
function columnsOf(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let part = '';
  for (const char of body) {
    if (char === ',' && depth === 0) {
      parts.push(part);
      part = '';
      continue;
    }
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    part += char;
  }
  parts.push(part);
  return parts
    .map((column) => column.trim().split(' ')[0]!)
    .filter((name) => !/^(PRIMARY|UNIQUE|FOREIGN|CHECK|CONSTRAINT)$/i.test(name));
}

// ---------------------------------------------------------------------------------------------------
// The statements: SQL literals in src/, their `${…}` parts resolved through the syntax tree.
// ---------------------------------------------------------------------------------------------------

interface Statement {
  /** The file, relative to src/. */
  file: string;
  line: number;
  /** The top-level declaration (or class member) it belongs to. */
  fn: string;
  /** Its text with every `${…}` replaced by what it resolves to (the literals it is made of). */
  text: string;
}

const sourceFiles = new Map<string, ts.SourceFile>();
function parse(path: string): ts.SourceFile {
  let file = sourceFiles.get(path);
  if (!file) {
    file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2024, true);
    sourceFiles.set(path, file);
  }
  return file;
}

function sourcesUnder(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

const isLiteral = (node: ts.Node) =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);

const SQL_START = /^\s*\(?\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP)\b/;

/** A literal that starts like SQL (its text before any `${…}`). */
const isSqlLiteral = (node: ts.Node) =>
  isLiteral(node) &&
  SQL_START.test(ts.isTemplateExpression(node) ? node.head.text : (node as ts.StringLiteral).text);

/** A literal's text, each `${…}` replaced by what it resolves to. */
function literalText(node: ts.Node, depth: number): string {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  const template = node as ts.TemplateExpression;
  return (
    template.head.text +
    template.templateSpans.map((span) => resolveNode(span.expression, depth) + span.literal.text).join('')
  );
}

/**
 * What an expression (or a declaration's initializer, or a function's body) contributes to SQL: its
 * literals and, for each name it uses, what that name's declaration contributes. Four levels deep at most.
 */
function resolveNode(node: ts.Node, depth: number): string {
  if (depth > 4) return '';
  if (isLiteral(node)) return literalText(node, depth + 1);
  if (ts.isIdentifier(node)) {
    if (ts.isPropertyAccessExpression(node.parent) && node.parent.name === node) return '';
    const declaration = declarationOf(node);
    return declaration ? resolveNode(declaration, depth + 1) : '';
  }
  // Running a query yields rows, not SQL: `rows` in `${rows.map(…)}` adds nothing.
  if (ts.isCallExpression(node) && node.arguments.some(isSqlLiteral)) return '';
  const pieces: string[] = [];
  node.forEachChild((child) => {
    pieces.push(resolveNode(child, depth));
  });
  return pieces.filter(Boolean).join(' ');
}

/**
 * The node a name's value comes from, found lexically: a variable's initializer (or the array a
 * `for … of` walks), a function declaration, or the same in the module an import names. Undefined for a
 * parameter or anything else.
 */
function declarationOf(name: ts.Identifier): ts.Node | undefined {
  const text = name.text;
  for (let scope: ts.Node | undefined = name.parent; scope; scope = scope.parent) {
    if (ts.isFunctionLike(scope) && scope.parameters.some((p) => binds(p.name, text))) return undefined;
    if (ts.isForOfStatement(scope) && ts.isVariableDeclarationList(scope.initializer)) {
      if (scope.initializer.declarations.some((d) => binds(d.name, text))) return scope.expression;
    }
    if (ts.isBlock(scope) || ts.isSourceFile(scope)) {
      const found = declaredIn(scope.statements, text);
      if (found) return found;
    }
    if (ts.isSourceFile(scope)) return imported(scope, text);
  }
  return undefined;
}

function declaredIn(statements: ts.NodeArray<ts.Statement>, text: string): ts.Node | undefined {
  for (const statement of statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name?.text === text) return statement.body;
    if (ts.isVariableStatement(statement)) {
      const declaration = statement.declarationList.declarations.find((d) => binds(d.name, text));
      if (declaration) return declaration.initializer;
    }
  }
  return undefined;
}

function imported(file: ts.SourceFile, text: string): ts.Node | undefined {
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    const specifier = bindings.elements.find((element) => element.name.text === text);
    if (!specifier || !statement.moduleSpecifier.text.startsWith('.')) continue;
    const from = parse(resolve(dirname(file.fileName), statement.moduleSpecifier.text));
    return declaredIn(from.statements, (specifier.propertyName ?? specifier.name).text);
  }
  return undefined;
}

function binds(name: ts.BindingName, text: string): boolean {
  if (ts.isIdentifier(name)) return name.text === text;
  return name.elements.some((element) => !ts.isOmittedExpression(element) && binds(element.name, text));
}

/** The name of the top-level declaration a node belongs to (`Class.member` inside a class). */
function ownerOf(node: ts.Node): string {
  let top = node;
  let member: string | undefined;
  while (!ts.isSourceFile(top.parent)) {
    if (ts.isClassElement(top) && top.name && ts.isIdentifier(top.name)) member = top.name.text;
    top = top.parent;
  }
  const name = ts.isVariableStatement(top)
    ? top.declarationList.declarations[0]!.name.getText()
    : ts.isFunctionDeclaration(top) || ts.isClassDeclaration(top)
      ? top.name?.text
      : undefined;
  return [name ?? '(module)', member].filter(Boolean).join('.');
}

function statementsIn(path: string): Statement[] {
  const file = parse(path);
  const found: Statement[] = [];
  const visit = (node: ts.Node) => {
    if (isSqlLiteral(node)) {
      found.push({
        file: relative(SRC, path),
        line: file.getLineAndCharacterOfPosition(node.getStart()).line + 1,
        fn: ownerOf(node),
        text: literalText(node, 0).replace(/\s+/g, ' '),
      });
    }
    node.forEachChild(visit);
  };
  visit(file);
  return found;
}

const STOP_WORDS = new Set(
  'WHERE ON SET ORDER GROUP LIMIT VALUES SELECT AS LEFT RIGHT INNER OUTER CROSS JOIN USING FOR RETURNING DEFAULT'.split(
    ' ',
  ),
);

/** The known tables a statement reads or writes: the names after FROM, JOIN, INTO and UPDATE. */
function tablesOf(text: string, known: Set<string>): Set<string> {
  const tables = new Set<string>();
  for (const keyword of text.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE)\b/g)) {
    const after = text.slice(keyword.index + keyword[0].length).match(/^(?:\s+\w+)+/)?.[0] ?? '';
    for (const word of after.trim().split(/\s+/)) {
      if (STOP_WORDS.has(word.toUpperCase())) break;
      if (known.has(word)) tables.add(word);
    }
  }
  return tables;
}

/** Compares `workspace_id` with a parameter, or inserts a `workspace_id`. */
const isScoped = (text: string) =>
  /\bworkspace_id\s*(?:=|IN)\s*\(?\s*\$\d/.test(text) ||
  /\bINSERT INTO \w+\s*\([^)]*\bworkspace_id\b/.test(text);

// ---------------------------------------------------------------------------------------------------

const ENGINES = ['sqlite', 'postgres'] as const;

const sources = sourcesUnder(SRC);
const statements = sources.flatMap(statementsIn);

function schemaFor(engine: (typeof ENGINES)[number]): Schema {
  const schema: Schema = new Map();
  for (const migration of listMigrations(engine)) applyDdl(schema, migration.sql, migration.name);
  // Tables made outside the migrations (schema_migrations, by migrate.ts).
  for (const statement of statements) applyDdl(schema, statement.text, statement.file);
  return schema;
}

/** What was found but is not listed, and what is listed but was not found; sorted, for one message. */
function differences(found: Iterable<string>, listed: Iterable<string>) {
  const [f, l] = [new Set(found), new Set(listed)];
  return {
    unlisted: [...f].filter((name) => !l.has(name)).sort(),
    stale: [...l].filter((name) => !f.has(name)).sort(),
  };
}

/**
 * The rows of the table under a `###` heading of the docs section, each as `name kind` for every name in
 * backticks in its first cell, with the row's Kind column.
 */
function documented(heading: string): string[] {
  const docs = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
  const section = docs.split(/^## /m).find((part) => part.startsWith('Past one PostgreSQL'));
  assert.ok(section, 'docs/deployment.md has a section "## Past one PostgreSQL"');
  const sub = section.split(/^### /m).find((part) => part.startsWith(heading));
  assert.ok(sub, `docs/deployment.md, "Past one PostgreSQL", has a subsection "### ${heading}"`);
  const rows = sub
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*[-:]/.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim()));
  const kind = rows[0]!.indexOf('Kind');
  assert.ok(kind > 0, `the table under "### ${heading}" has a Kind column`);
  return rows
    .slice(1)
    .flatMap((cells) => [...cells[1]!.matchAll(/`(\w+)`/g)].map((m) => `${m[1]} ${cells[kind]}`));
}

const schemas = ENGINES.map((engine) => ({ engine, schema: schemaFor(engine) }));
const knownTables = new Set(schemas.flatMap(({ schema }) => [...schema.keys()]));
const globalTables = new Set(
  Object.entries(TABLES_WITHOUT_WORKSPACE_ID)
    .filter(([, { kind }]) => kind === 'global')
    .map(([name]) => name),
);
const workspaceTables = new Set([...knownTables].filter((name) => !globalTables.has(name)));
const listedFunctions = Object.assign({}, ...UNSCOPED_STATEMENTS.map((group) => group.functions)) as Record<
  string,
  number
>;

/** Statements that touch a workspace's table without naming the workspace. */
const unscoped = statements.filter(
  (statement) => tablesOf(statement.text, workspaceTables).size > 0 && !isScoped(statement.text),
);

describe('every table and statement is scoped by workspace_id (issue 22)', () => {
  for (const { engine, schema } of schemas) {
    test(`every table has workspace_id, except those listed (${engine})`, () => {
      const without = [...schema].filter(([, columns]) => !columns.has('workspace_id')).map(([name]) => name);
      const { unlisted, stale } = differences(without, Object.keys(TABLES_WITHOUT_WORKSPACE_ID));
      assert.deepEqual(
        unlisted,
        [],
        'tables without workspace_id: add the column, or list the table in TABLES_WITHOUT_WORKSPACE_ID ' +
          'and in docs/deployment.md with why',
      );
      assert.deepEqual(stale, [], 'listed, but gone or keyed by workspace_id now: take them off both lists');
    });
  }

  test('every statement on a workspace table filters or sets workspace_id, except those listed', () => {
    const found: Record<string, number> = {};
    for (const { fn } of unscoped) found[fn] = (found[fn] ?? 0) + 1;
    const { unlisted, stale } = differences(Object.keys(found), Object.keys(listedFunctions));
    assert.deepEqual(
      unlisted.map((fn) =>
        unscoped
          .filter((statement) => statement.fn === fn)
          .map((statement) => `${statement.file}:${statement.line} ${fn}: ${statement.text.slice(0, 100)}`),
      ),
      [],
      'statements that do not name their workspace: add `workspace_id = $n`, or list the function in ' +
        'UNSCOPED_STATEMENTS and in docs/deployment.md with why',
    );
    assert.deepEqual(stale, [], 'listed, but scoped (or gone) now: take them off both lists');
    for (const [fn, count] of Object.entries(found)) {
      assert.equal(
        count,
        listedFunctions[fn],
        `${fn} has ${count} unscoped statements, listed with ${listedFunctions[fn]}`,
      );
    }
  });

  test('docs/deployment.md lists the same tables and statements, of the same kinds', () => {
    const tables = Object.entries(TABLES_WITHOUT_WORKSPACE_ID).map(([name, { kind }]) => `${name} ${kind}`);
    const functions = UNSCOPED_STATEMENTS.flatMap(({ kind, functions }) =>
      Object.keys(functions).map((fn) => `${fn} ${kind}`),
    );
    for (const [heading, listed] of [
      ['Tables without', tables],
      ['Statements not scoped', functions],
    ] as const) {
      const { unlisted, stale } = differences(documented(heading), listed);
      assert.deepEqual(
        { onlyInTheDocs: unlisted, onlyInThisTest: stale },
        { onlyInTheDocs: [], onlyInThisTest: [] },
        `docs/deployment.md, "### ${heading}…", and this test's list differ (name and kind)`,
      );
    }
  });

  test('the reader finds and resolves the statements it should', () => {
    const textOf = (fn: string) =>
      statements
        .filter((statement) => statement.fn === fn)
        .map((statement) => statement.text)
        .join('\n');
    // A column map (`${holdColumns.select()}`: its column names), an array joined (`${where.join(…)}`), a
    // function's result (`${where}` from scoped()), an imported function (`${openProxyHoldWhere(…)}`), the
    // tables a loop walks (`${table}`).
    assert.match(textOf('findHoldByReference'), /SELECT id workspace_id .* FROM holds WHERE id = \$1/);
    assert.match(textOf('listHolds'), /FROM holds WHERE workspace_id = \$1/);
    assert.match(textOf('outcomeCounts'), /FROM holds h WHERE h\.workspace_id = \$1/);
    assert.match(textOf('READ_AFTER_LOCK'), /AND call_key =.*AND status NOT IN/);
    // PostgreSQL's lock_for_submission runs this same text (migration 034 makes it from the store's read;
    // test/storage.test.ts compares the function with it), so there is no second copy to keep in step.
    assert.deepEqual([...tablesOf(textOf('endAccessOfMember'), knownTables)].sort(), [
      'decision_tokens',
      'embed_tokens',
      'login_tokens',
      'passkeys',
      'sessions',
      'webauthn_challenges',
    ]);
    // The result of a query is not SQL: activityPage's second statement reads `rows`, yet is unscoped.
    assert.ok(unscoped.some((statement) => statement.fn === 'activityPage'));
    // Every literal handed to .one/.all/.run, or as a Statement's `text` in src/store/, is one this test
    // reads as SQL (which it knows by its first keyword, in capitals).
    for (const path of sources) {
      const store = relative(SRC, path).startsWith('store/');
      const visit = (node: ts.Node) => {
        const handed =
          (ts.isCallExpression(node) &&
            ts.isPropertyAccessExpression(node.expression) &&
            ['one', 'all', 'run'].includes(node.expression.name.text) &&
            node.arguments[0]) ||
          (store &&
            ts.isPropertyAssignment(node) &&
            ts.isIdentifier(node.name) &&
            node.name.text === 'text' &&
            node.initializer);
        if (handed && isLiteral(handed)) {
          const where = `${relative(SRC, path)}:${parse(path).getLineAndCharacterOfPosition(handed.getStart()).line + 1}`;
          assert.ok(isSqlLiteral(handed), `${where}: SQL this test cannot read (keywords in capitals)`);
        }
        node.forEachChild(visit);
      };
      visit(parse(path));
    }
    assert.ok(statements.length > 100, `${statements.length} statements found`);
  });
});
