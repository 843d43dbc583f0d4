/**
 * Issue 42, what a newcomer hit in the first hour: invite links at a dead port, `/` a JSON 404, a
 * start-up log and an empty inbox that say nothing about what next, the remote CLI refusing
 * `--workspace`, a test count that hid 64 skipped suites, usage lines for help, misdirected error
 * texts, and JSON logs at a terminal.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/services/api-keys.ts';
import { appClient } from './support/app-client.ts';
import { backends, sqlite, type Storage } from './support/backends.ts';
import { approvals, NODE, ROOT } from './support/cli.ts';
import { call } from './support/http.ts';
import { killServerProcesses, startServerProcess } from './support/server-process.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

/** One line on stderr, exit 1 or 2, nothing on stdout. */
function oneLineRefusal(run: { code: number | null; stdout: string; stderr: string }, reason: RegExp) {
  assert.notEqual(run.code, 0);
  assert.equal(run.stdout, '');
  assert.equal(run.stderr.trimEnd().split('\n').length, 1, run.stderr);
  assert.match(run.stderr, reason);
}

for (const backend of backends) {
  describe(`the first hour (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    let t: TestService;
    const app = appClient(() => t);
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t.close());

    test('/ in a browser leads to the app: its first-run page on a new install', async () => {
      const root = await fetch(`${t.url}/`, { redirect: 'manual' });
      assert.equal(root.status, 303);
      assert.equal(root.headers.get('location'), '/app');
      const opened = await fetch(`${t.url}/`);
      assert.equal(new URL(opened.url).pathname, '/app/setup');
    });

    test("the empty inbox shows the next step: a key, and a first hold to copy with this service's address", async () => {
      const { workspace } = await t.workspace();
      const session = await app.signIn(workspace, 'admin@acme.test');
      const inbox = await app.get(session, '/app/inbox');
      assert.match(inbox.text, /Nothing waits for your decision\./);
      assert.match(inbox.text, /href="\/app\/admin\/keys"/);
      const command = /<p class="secret" id="first-hold">([^<]+)<\/p>/.exec(inbox.text)?.[1];
      assert.ok(command, 'a command to copy');
      assert.ok(command.startsWith(`curl -s ${t.url}/api/v1/holds `), command);
      assert.match(inbox.text, /data-copy="first-hold"/);
    });

    test('the remote CLI takes --workspace when it names the key’s workspace, and refuses another in one line', async () => {
      const { workspace } = await t.workspace();
      const admin = await createApiKey(t.service.ctx, { workspace, env: 'live', scope: 'admin' });
      const agent = await createApiKey(t.service.ctx, { workspace, env: 'live' });
      const remote = (args: string[], key = admin.key) =>
        approvals(t.storage, args, { APPROVALS_URL: t.url, APPROVALS_KEY: key });
      const named = await remote(['export', '--workspace', workspace.slug]);
      assert.equal(named.code, 0, named.stderr);
      // The export's first line names the workspace, as the local command's does, not the URL.
      assert.match(
        named.stdout.split('\n')[0]!,
        new RegExp(`^# ${workspace.slug}, configuration version \\d+:`),
      );
      oneLineRefusal(
        await remote(['holds', 'list', '--workspace', 'elsewhere']),
        new RegExp(
          `^approvals: --workspace elsewhere is not this key's workspace: .* of ${workspace.slug}\\n$`,
        ),
      );
      // An agent key on a command that only reads: refused for its scope, not for "changing" anything.
      const read = await remote(['holds', 'list'], agent.key);
      oneLineRefusal(read, /admin-scope key \(403 forbidden\)/);
      assert.doesNotMatch(read.stderr, /change the configuration/);
    });

    test('a 422 of the reports API links to the page the contract names, which leads to the reports page', async () => {
      const { key } = await t.workspace();
      const answer = await call(t.url, 'GET', '/api/v1/reports/oversight?from=yesterday', { key });
      assert.equal(answer.status, 422);
      // decisions.md: `{base_url}/docs/holds` is the URL in validation errors, whatever the route.
      assert.equal(answer.body.docs, `${t.url}/docs/holds`);
      const page = await fetch(answer.body.docs).then((response) => response.text());
      assert.match(page, /href="[^"]*reports[^"]*"[^>]*>[^<]*report parameters/i);
    });
  });

  describe(
    `invite links on a service at a non-default port (${backend.name})`,
    { skip: backend.skip },
    () => {
      let storage: Storage;
      before(async () => {
        storage = await backend.create();
      });
      after(async () => {
        await killServerProcesses();
        await storage.drop();
      });

      test('before the service ever started, the CLI refuses to guess its address', async () => {
        oneLineRefusal(
          await approvals(storage, [
            'users',
            'invite',
            '--workspace',
            'acme',
            '--email',
            'a@acme.test',
            '--init',
          ]),
          /^approvals: the service's address is not known: it has not started on this storage yet/,
        );
      });

      test('`approvals users invite` without PORT or PUBLIC_URL prints a link to the running service', async () => {
        const server = await startServerProcess(storage);
        assert.notEqual(new URL(server.url).port, '8080');
        const made = await approvals(storage, ['workspace', 'create', 'acme', '--name', 'Acme']);
        assert.equal(made.code, 0, made.stderr);
        const file = join(storage.env.DATA_DIR, 'acme.yaml');
        writeFileSync(file, 'members:\n  - { email: alice@acme.test, name: Alice, role: admin }\n');
        assert.equal((await approvals(storage, ['apply', '--workspace', 'acme', '-f', file])).code, 0);
        const invite = await approvals(storage, [
          'users',
          'invite',
          '--workspace',
          'acme',
          '--email',
          'alice@acme.test',
          '--json',
        ]);
        assert.equal(invite.code, 0, invite.stderr);
        const { url } = JSON.parse(invite.stdout) as { url: string };
        assert.ok(url.startsWith(`${server.url}/app/login/`), url);
        assert.equal(
          (await fetch(url, { redirect: 'manual' })).status < 500,
          true,
          'the link reaches the service',
        );
      });
    },
  );
}

describe('the start-up log', () => {
  let storage: Storage;
  before(async () => {
    storage = await sqlite.create();
  });
  after(async () => {
    await killServerProcesses();
    await storage.drop();
  });

  test('names the app and the docs; JSON lines when stdout is not a terminal', async () => {
    const server = await startServerProcess(storage, { LOG_LEVEL: 'info' });
    const line = await until('the listening line', async () =>
      server
        .output()
        .split('\n')
        .find((text) => text.includes('the app at')),
    );
    const record = JSON.parse(line) as { msg: string };
    assert.equal(record.msg, `listening: the app at ${server.url}/app, the docs at ${server.url}/docs`);
  });

  test('LOG_FORMAT=pretty: readable lines, time, level and message first', async () => {
    const server = await startServerProcess(storage, { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' });
    const line = await until('the listening line', async () =>
      server
        .output()
        .split('\n')
        .find((text) => text.includes('the app at')),
    );
    assert.match(
      line,
      new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  listening: the app at ${server.url}/app, the docs at ${server.url}/docs  url=`,
      ),
    );
  });
});

describe('the command line helps', () => {
  let storage: Storage;
  before(async () => {
    storage = await sqlite.create();
  });
  after(() => storage.drop());

  test('`approvals help <command>` and `<command> --help`: what it does, its options, an example', async () => {
    const [help, flag] = await Promise.all([
      approvals(storage, ['help', 'apply']),
      approvals(storage, ['apply', '--help']),
    ]);
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stdout, flag.stdout);
    assert.match(help.stdout, /^usage: approvals apply --workspace <slug> -f <file.yaml\|file.json>/);
    assert.match(help.stdout, /\n\nApplies a workspace file/);
    assert.match(help.stdout, /\nOptions:\n {2}--workspace <slug> +the workspace/);
    assert.match(help.stdout, /\nExample:\n {2}approvals apply --workspace acme -f acme\.yaml\n$/);
    const unknown = await approvals(storage, ['help', 'frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^approvals: no command frobnicate\n/);
  });

  test('every command has a description, and an example that names it', async () => {
    const all = await approvals(storage, ['--help']);
    const commands = all.stdout
      .split('\n')
      .filter((line) => line.startsWith('  '))
      .map((line) =>
        line
          .trim()
          .split(' ')
          .slice(0, 2)
          .filter((word) => /^[a-z]+$/.test(word))
          .join(' '),
      );
    assert.ok(commands.length >= 20);
    for (const command of new Set(commands)) {
      const help = await approvals(storage, ['help', ...command.split(' ')]);
      assert.equal(help.code, 0, `${command}: ${help.stderr}`);
      assert.match(help.stdout, /\n\n[A-Z][^\n]+\.\n/, `${command} says what it does`);
      assert.match(help.stdout, new RegExp(`Example:\\n {2}approvals ${command}`), `${command}'s example`);
    }
  });

  test('--version prints the version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const run = await approvals(storage, ['--version']);
    assert.equal(run.code, 0);
    assert.equal(run.stdout, `approvals ${version}\n`);
  });

  test('an unknown option: one line in our words, with the nearest known option', async () => {
    const run = await approvals(storage, ['export', '--worksapce', 'acme']);
    assert.equal(run.code, 2);
    const [reason, ...rest] = run.stderr.trimEnd().split('\n');
    assert.equal(reason, 'approvals: unknown option --worksapce (did you mean --workspace?)');
    assert.deepEqual(rest, ['usage: approvals export --workspace <slug>']);
    const missing = await approvals(storage, ['export', '--workspace']);
    assert.match(missing.stderr, /^approvals: --workspace needs a value\n/);
  });

  test('an unknown command is named, with the nearest one, before any storage is looked for', async () => {
    const empty = await sqlite.create();
    try {
      const local = await approvals(empty, ['aply', '--workspace', 'acme']);
      assert.equal(local.code, 2);
      assert.match(local.stderr, /^approvals: unknown command: aply \(did you mean apply\?\)\n/);
      const remote = await approvals(empty, ['exprot'], {
        APPROVALS_URL: 'http://127.0.0.1:9',
        APPROVALS_KEY: 'ak_test_x',
      });
      assert.match(remote.stderr, /^approvals: unknown command: exprot \(did you mean export\?\)\n/);
    } finally {
      await empty.drop();
    }
  });
});

test('`npm test` closes with the suites it skipped whole, and why', () => {
  const dir = mkdtempSync(join(tmpdir(), 'skipped-suites-'));
  try {
    const file = join(dir, 'fixture.test.ts');
    writeFileSync(
      file,
      `import { describe, test } from 'node:test';
import { backends } from '${join(ROOT, 'test/support/backends.ts')}';
for (const backend of backends)
  describe(backend.name, { skip: backend.skip }, () => {
    test('one', () => {});
    test('two', () => {});
  });
`,
    );
    // The reporters of the test script, on a file whose PostgreSQL suite is skipped.
    const script = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { test: string } }
    ).scripts.test;
    const reporters = script.split(' ').filter((word) => word.startsWith('--test-reporter'));
    const env: Record<string, string | undefined> = { ...process.env, TEST_DATABASE_URL: '' };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(NODE, ['--test', ...reporters, file], { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /ℹ skipped 0\n/);
    assert.match(
      run.stdout,
      /ℹ suites skipped 1, their tests not counted above\nℹ {3}1 × TEST_DATABASE_URL is not set: PostgreSQL suites skipped\n/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
