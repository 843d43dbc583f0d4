/**
 * The `approvals` command line, run for real as a subprocess against each storage backend, with a
 * service on the same storage to check that what the command did takes effect.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/services/api-keys.ts';
import { requireWorkspace } from '../src/services/workspaces.ts';
import { backends, sqlite as sqliteBackend, type Storage } from './support/backends.ts';
import { approvals, ROOT, type Run } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { freePort } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { startTeamsConnector } from './support/teams-connector.ts';

/** Success with --json: exit 0, nothing on stderr, exactly one JSON object (one line) on stdout. */
function jsonOut(run: Run): Record<string, unknown> {
  assert.equal(run.code, 0, `exit code 0 expected; stderr: ${run.stderr}`);
  assert.equal(run.stderr, '');
  assert.ok(run.stdout.endsWith('\n'), 'output ends with a newline');
  const lines = run.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line of output expected, got: ${run.stdout}`);
  const value = JSON.parse(lines[0]!) as unknown;
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), 'a JSON object');
  return value as Record<string, unknown>;
}

/** A refusal: non-zero exit, nothing on stdout, a one-line reason on stderr. */
function refused(run: Run, mentions: RegExp) {
  assert.notEqual(run.code, 0, `non-zero exit expected; stdout: ${run.stdout}`);
  assert.equal(run.stdout, '', 'nothing on stdout');
  assert.ok(run.stderr.endsWith('\n'), 'the reason ends with a newline');
  const lines = run.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `a one-line reason expected, got: ${run.stderr}`);
  assert.match(lines[0]!, mentions);
}

/**
 * A usage error: exit 2, nothing on stdout, the reason, then the usage of that command only (or, for a
 * command that does not exist, where to find them all): never the whole usage after every error.
 */
function usage(run: Run, mentions: RegExp, command: string | null) {
  assert.equal(run.code, 2, `exit code 2 expected; stderr: ${run.stderr}`);
  assert.equal(run.stdout, '', 'nothing on stdout');
  const [reason, ...rest] = run.stderr.trimEnd().split('\n');
  assert.match(reason!, mentions);
  if (command === null) assert.deepEqual(rest, ['Run `approvals --help` for every command.']);
  else {
    assert.ok(rest.length >= 1, run.stderr);
    for (const line of rest) assert.ok(line.startsWith(`usage: approvals ${command}`), run.stderr);
  }
}

/** Debian's own Node.js, when it is older than the project's (as on this project's machines). */
const OLD_NODE = ((version) => (/^v(1\d|2[0-3])\./.test(version) ? '/usr/bin/node' : null))(
  spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout ?? '',
);

const STATUS_AFTER = { allowed: 'auto_allowed', pending: 'pending', denied: 'rejected' } as const;

for (const backend of backends) {
  // A guard against a hang, not a measure: some sixty processes start one after the other, and beside
  // the crash harness on two cores that has taken 100 s on PostgreSQL.
  describe(`approvals command (${backend.name})`, { skip: backend.skip, timeout: 240_000 }, () => {
    let storage: Storage;
    let t: TestService;
    const slug = `acme-${Date.now().toString(36)}`;
    let workspaceId = '';
    /** A key of `slug` that stays valid (the test-env key). */
    let key = '';

    before(async () => {
      storage = await backend.create();
      // A tiny legacy allowance makes the plan visible: the second hold of the month is refused.
      t = await startTestService(backend, { storage, env: { LEGACY_FREE_MONTHLY_HOLDS: '1' } });
    });
    after(async () => {
      await t?.close();
    });

    const file = (name: string, text: string) => {
      const path = join(storage.env.DATA_DIR, name);
      writeFileSync(path, text);
      return path;
    };
    const submit = (tool: string, apiKey = key) =>
      call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission({ tool_name: tool }) });
    const chainLength = async () => {
      const answer = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
      assert.equal(answer.status, 200);
      assert.equal(answer.body.valid, true);
      return answer.body.checked as number;
    };

    test('workspace create prints exactly one JSON object {id, slug, name}', async () => {
      const out = jsonOut(
        await approvals(storage, ['workspace', 'create', slug, '--name', 'Acme Inc', '--json']),
      );
      assert.deepEqual(Object.keys(out).sort(), ['id', 'name', 'slug']);
      assert.equal(out.slug, slug);
      assert.equal(out.name, 'Acme Inc');
      assert.equal(typeof out.id, 'string');
      assert.ok((out.id as string).length > 0);
      workspaceId = out.id as string;
      const stored = await requireWorkspace(t.service.ctx, slug);
      assert.equal(stored.id, workspaceId);
      assert.equal(stored.plan, 'standard');
    });

    test('--plan legacy_free makes a legacy free workspace', async () => {
      const legacySlug = `${slug}-legacy`;
      const out = jsonOut(
        await approvals(storage, [
          'workspace',
          'create',
          legacySlug,
          '--name',
          'Legacy',
          '--plan',
          'legacy_free',
          '--json',
        ]),
      );
      assert.equal(out.slug, legacySlug);
      const workspace = await requireWorkspace(t.service.ctx, legacySlug);
      assert.equal(workspace.plan, 'legacy_free');
      const { key: legacyKey } = await createApiKey(t.service.ctx, { workspace, env: 'live' });
      assert.equal((await submit('legacy_tool', legacyKey)).status, 201);
      const second = await submit('legacy_tool', legacyKey);
      assert.equal(second.status, 402);
      assert.equal(second.body.error, 'hold_limit_reached');
    });

    test('a taken slug and a bad slug are refused with a one-line reason', async () => {
      const [taken, bad] = await Promise.all([
        approvals(storage, ['workspace', 'create', slug, '--name', 'Again', '--json']),
        approvals(storage, ['workspace', 'create', 'Not_A_Slug!', '--name', 'Bad', '--json']),
      ]);
      refused(taken, /slug/);
      refused(bad, /slug/);
      // Nothing was created or changed.
      assert.equal((await requireWorkspace(t.service.ctx, slug)).name, 'Acme Inc');
    });

    test('keys create prints the key once; it works at once, and not at all once revoked', async () => {
      const [liveRun, testRun] = await Promise.all([
        approvals(storage, [
          'keys',
          'create',
          '--workspace',
          slug,
          '--env',
          'live',
          '--name',
          'ci',
          '--json',
        ]),
        approvals(storage, ['keys', 'create', '--workspace', slug, '--env', 'test', '--json']),
      ]);
      const live = jsonOut(liveRun);
      const testKey = jsonOut(testRun);
      for (const [out, env] of [
        [live, 'live'],
        [testKey, 'test'],
      ] as const) {
        assert.deepEqual(Object.keys(out).sort(), ['env', 'id', 'key', 'name', 'scope']);
        assert.equal(out.env, env);
        assert.equal(out.scope, 'agent');
        assert.equal(typeof out.id, 'string');
        const plaintext = out.key as string;
        assert.ok(plaintext.startsWith(`svc_${env}_`), plaintext);
        const secret = plaintext.slice(`svc_${env}_`.length);
        assert.match(secret, /^[A-Za-z0-9_-]+$/);
        assert.ok(Buffer.from(secret, 'base64url').length >= 32, 'at least 32 random bytes');
      }
      assert.equal(live.name, 'ci');
      assert.equal(testKey.name, null);
      assert.notEqual(live.key, testKey.key);
      assert.notEqual(live.id, testKey.id);

      const liveKey = live.key as string;
      key = testKey.key as string;
      const created = await submit('key_check', liveKey);
      assert.equal(created.status, 201);
      const record = await call(t.url, 'GET', `/api/v1/holds/${created.body.id}`, { key: liveKey });
      assert.equal(record.status, 200);
      assert.equal(record.body.environment, 'live');
      const viaTest = await submit('key_check');
      assert.equal(viaTest.status, 201);
      const testRecord = await call(t.url, 'GET', `/api/v1/holds/${viaTest.body.id}`, { key });
      assert.equal(testRecord.body.environment, 'test');

      const revoked = jsonOut(await approvals(storage, ['keys', 'revoke', live.id as string, '--json']));
      assert.deepEqual(revoked, { id: live.id, revoked: true });
      const refusedAnswer = await call(t.url, 'GET', `/api/v1/holds/${created.body.id}`, { key: liveKey });
      assert.equal(refusedAnswer.status, 401);
      assert.equal(refusedAnswer.body.error, 'unauthorized');
      assert.equal((await submit('key_check', liveKey)).status, 401);
      // The other key of the workspace is untouched.
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${created.body.id}`, { key })).status, 200);
    });

    test('keys revoke of an unknown key is refused', async () => {
      refused(await approvals(storage, ['keys', 'revoke', 'key_doesnotexist00', '--json']), /not found/);
    });

    test('apply takes a YAML file and a JSON file: members and tool classifications take effect', async () => {
      const yaml = file(
        'acme.yaml',
        [
          'name: Acme Applied',
          'members:',
          '  - { email: admin@acme.test, name: Admin, role: admin }',
          '  - { email: bob@acme.test, name: Bob, role: admin }',
          '  - { email: carol@acme.test, name: Carol, role: viewer }',
          'tools:',
          '  - { connection: SDK, tool: ship_it, classification: allow }',
          '  - { connection: SDK, tool: wire_money, classification: deny }',
          '  - { connection: SDK, tool: send_invoice, classification: approval }',
          '',
        ].join('\n'),
      );
      const before = await chainLength();
      const first = jsonOut(
        await approvals(storage, ['apply', '--workspace', slug, '-f', yaml, '--json']),
      ) as {
        version: number;
      };
      assert.deepEqual(
        { ...first, version: undefined },
        {
          applied: true,
          version: undefined,
          // The file names the admin "Admin": the workspace had "Ada Admin".
          items_changed: [
            'member:admin@acme.test',
            'member:bob@acme.test',
            'member:carol@acme.test',
            'profile',
            'tool:SDK/send_invoice',
            'tool:SDK/ship_it',
            'tool:SDK/wire_money',
          ],
        },
      );
      assert.ok(Number.isSafeInteger(first.version) && first.version > 0, 'the new version');
      assert.ok((await chainLength()) > before, 'the change is evidenced');
      assert.equal((await requireWorkspace(t.service.ctx, slug)).name, 'Acme Applied');

      const allowed = await submit('ship_it');
      assert.equal(allowed.status, 201);
      assert.equal(allowed.body.status, 'allowed');
      const allowedRecord = await call(t.url, 'GET', `/api/v1/holds/${allowed.body.id}`, { key });
      assert.equal(allowedRecord.body.status, STATUS_AFTER.allowed);
      assert.equal(allowedRecord.body.decision, null);

      const denied = await submit('wire_money');
      assert.equal(denied.status, 201);
      assert.equal(denied.body.status, 'denied');
      const deniedRecord = await call(t.url, 'GET', `/api/v1/holds/${denied.body.id}`, { key });
      assert.equal(deniedRecord.body.status, STATUS_AFTER.denied);
      assert.equal(deniedRecord.body.decision.verdict, 'reject');
      assert.equal(deniedRecord.body.decision.reason, 'Denied by rule: Tool classified deny');
      assert.equal(deniedRecord.body.decision.channel, 'rule');

      // Members: a viewer cannot decide, a declared admin can.
      const pending = await submit('send_invoice');
      assert.equal(pending.body.status, 'pending');
      const byCarol = await decideAs(t, workspaceId, pending.body.id, 'approve', 'carol@acme.test');
      assert.equal(byCarol.outcome, 'not_an_approver');
      const byBob = await decideAs(t, workspaceId, pending.body.id, 'approve', 'bob@acme.test');
      assert.equal(byBob.outcome, 'recorded');
      assert.equal(byBob.hold.status, 'approved');

      // The same declaration as JSON, changed: ship_it is now denied, bob is gone, dave is new.
      const json = file(
        'acme.json',
        JSON.stringify({
          members: [
            { email: 'admin@acme.test', name: 'Admin', role: 'admin' },
            { email: 'dave@acme.test', name: 'Dave', role: 'admin' },
          ],
          tools: [{ connection: 'SDK', tool: 'ship_it', classification: 'deny' }],
        }),
      );
      assert.deepEqual(
        jsonOut(await approvals(storage, ['apply', '--workspace', slug, '-f', json, '--json'])),
        {
          applied: true,
          version: first.version + 1,
          items_changed: [
            'member:bob@acme.test',
            'member:carol@acme.test',
            'member:dave@acme.test',
            'tool:SDK/ship_it',
          ],
        },
      );
      const nowDenied = await submit('ship_it');
      assert.equal(nowDenied.body.status, 'denied');
      const second = await submit('send_invoice');
      assert.equal(second.body.status, 'pending');
      await assert.rejects(decideAs(t, workspaceId, second.body.id, 'approve', 'bob@acme.test'), /no member/);
      const byDave = await decideAs(t, workspaceId, second.body.id, 'reject', 'dave@acme.test');
      assert.equal(byDave.outcome, 'recorded');
      assert.equal(byDave.hold.status, 'rejected');
    });

    test('apply refuses invalid files, names the field, and changes nothing', async () => {
      // Each file would also classify a fresh tool as allow: that must not happen.
      const tools = 'tools:\n  - { connection: SDK, tool: sneaky_tool, classification: allow }\n';
      const member = (fields: string) => `members:\n  - { ${fields} }\n`;
      const cases: [string, string, RegExp][] = [
        ['bad.yaml', `${tools}members: [ { email: eve@acme.test, name: Eve\n`, /YAML/],
        [
          'bad-email.yaml',
          tools + member('email: not-an-email, name: Eve, role: admin'),
          /members\.0\.email/,
        ],
        ['bad-role.yaml', tools + member('email: eve@acme.test, name: Eve, role: owner'), /members\.0\.role/],
        [
          'rules.yaml',
          `${tools}rules:\n  - { name: r, tool: "*", effect: approval, approvers: ["group:ghosts"] }\n`,
          /line 4: rules\.0\.approvers\.0: names no group/,
        ],
        [
          'webhook.yaml',
          `${tools}webhook: { url: "https://hooks.acme.test/x" }\n`,
          /webhook\.url: cannot be resolved/,
        ],
        ['unknown.yaml', `${tools}colour: red\n`, /colour/],
      ];
      const before = await chainLength();
      const runs = await Promise.all(
        cases.map(([name, text]) =>
          approvals(storage, ['apply', '--workspace', slug, '-f', file(name, text), '--json']),
        ),
      );
      runs.forEach((run, index) => {
        const [name, , mentions] = cases[index]!;
        assert.doesNotThrow(() => refused(run, mentions), `${name}: ${JSON.stringify(run)}`);
      });
      assert.equal(await chainLength(), before, 'no evidence entry: nothing was applied');
      await assert.rejects(decideAs(t, workspaceId, 'svc_pa_none', 'approve', 'eve@acme.test'), /no member/);
      const sneaky = await submit('sneaky_tool');
      assert.equal(sneaky.status, 201);
      assert.equal(sneaky.body.status, 'pending', 'the tool is still new (fail-closed)');
    });

    test('export prints the file apply takes; simulate reports on a draft', async () => {
      const exported = await approvals(storage, ['export', '--workspace', slug]);
      assert.equal(exported.code, 0, exported.stderr);
      assert.match(exported.stdout, /^name: /m);
      assert.match(exported.stdout, /^members:/m);
      const asJson = jsonOut(await approvals(storage, ['export', '--workspace', slug, '--json'])) as {
        workspace: string;
        version: number;
        config: { members: unknown };
      };
      assert.equal(asJson.workspace, slug);
      assert.ok(asJson.version > 0);
      assert.ok(Array.isArray(asJson.config.members));
      const draft = file('draft.yaml', 'rules:\n  - { name: Deny all, tool: "*", effect: deny }\n');
      const report = jsonOut(
        await approvals(storage, ['simulate', '--workspace', slug, '-f', draft, '--since', '7d', '--json']),
      ) as { holds: number; changed: number; transitions: { to: string; count: number }[] };
      assert.ok(report.holds > 0);
      assert.ok(report.changed > 0);
      assert.equal(
        report.transitions.reduce((sum, transition) => sum + transition.count, 0),
        report.changed,
      );
      assert.ok(report.transitions.every((transition) => transition.to === 'deny'));
      const text = await approvals(storage, ['simulate', '--workspace', slug, '-f', draft]);
      assert.match(text.stdout, /would be decided differently/);
      // A draft that holds calls: each rule that makes calls pending, and each example it holds, with the
      // reminders and escalation steps the hold would get (the JSON is checked in rules.test.ts).
      const holding = file(
        'holding.yaml',
        'rules:\n  - { name: Held, tool: "*", effect: approval, timeout_minutes: 60, remind: [10m], escalate: { after: 15m, to: [role:admin] } }\n',
      );
      const followUps = 'escalates after 15m to role:admin; reminds 10m before the deadline';
      const held = await approvals(storage, ['simulate', '--workspace', slug, '-f', holding]);
      assert.match(
        held.stdout,
        new RegExp(`^The draft makes (\\d+) of them pending:\n {2}Held: \\1; ${followUps}$`, 'm'),
      );
      assert.match(held.stdout, new RegExp(` -> approval x1, 60 min \\(Held\\); ${followUps}$`, 'm'));
      const badSince = await approvals(storage, [
        'simulate',
        '--workspace',
        slug,
        '-f',
        draft,
        '--since',
        'soon',
      ]);
      assert.equal(badSince.code, 2);
    });

    test('migrate --json on a migrated database applies nothing', async () => {
      assert.deepEqual(jsonOut(await approvals(storage, ['migrate', '--json'])), { applied: [] });
    });

    test('an unknown command or missing options exit 2 with the usage on stderr', async () => {
      const [unknown, badEnv, noFile, noName, badOption] = await Promise.all([
        approvals(storage, ['frobnicate', '--json']),
        approvals(storage, ['keys', 'create', '--workspace', slug, '--env', 'staging', '--json']),
        approvals(storage, ['apply', '--workspace', slug, '--json']),
        approvals(storage, ['workspace', 'create', `${slug}-x`, '--json']),
        approvals(storage, ['migrate', '--bogus']),
      ]);
      usage(unknown, /unknown command: frobnicate/, null);
      usage(badEnv, /--env/, 'keys create');
      usage(noFile, /--file|-f/, 'apply');
      usage(noName, /--name/, 'workspace create');
      usage(badOption, /bogus/, 'migrate');
      await assert.rejects(requireWorkspace(t.service.ctx, `${slug}-x`), /not found/);
    });

    test('no command at all is a usage error: reason and where to look on stderr', async () => {
      const run = await approvals(storage, []);
      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      assert.equal(
        run.stderr,
        'approvals: a command is required\nRun `approvals --help` for every command.\n',
      );
    });

    test('doctor: each setting it can check, one line each; exit 1 when one fails', async () => {
      // A Slack stand-in that knows one bot token, and an SMTP port that takes connections.
      const slackApi = http.createServer((request, response) => {
        const good = request.headers.authorization === 'Bearer xoxb-good-token';
        response.setHeader('content-type', 'application/json');
        response.end(
          JSON.stringify(good ? { ok: true, team: 'Acme' } : { ok: false, error: 'invalid_auth' }),
        );
      });
      const smtp = net.createServer((socket) => socket.end());
      await Promise.all([
        new Promise<void>((resolve) => slackApi.listen(0, '127.0.0.1', resolve)),
        new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve)),
      ]);
      const slackUrl = `http://127.0.0.1:${(slackApi.address() as net.AddressInfo).port}`;
      const smtpPort = (smtp.address() as net.AddressInfo).port;
      try {
        const healthy = await approvals(storage, ['doctor', '--json'], {
          PUBLIC_URL: 'https://approvals.acme.test',
          SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
          SLACK_BOT_TOKEN: 'xoxb-good-token',
          SLACK_SIGNING_SECRET: 'secret',
          SLACK_API_URL: slackUrl,
        });
        assert.equal(healthy.code, 0, healthy.stderr);
        const statuses = (run: Run) =>
          Object.fromEntries(
            (JSON.parse(run.stdout) as { checks: { name: string; status: string }[] }).checks.map((c) => [
              c.name,
              c.status,
            ]),
          );
        assert.deepEqual(statuses(healthy), {
          storage: 'ok',
          PUBLIC_URL: 'ok',
          SMTP_URL: 'ok',
          Slack: 'ok',
          Teams: 'off',
          SMS: 'off',
        });
        const closed = await freePort();
        const broken = await approvals(storage, ['doctor', '--json'], {
          SMTP_URL: `smtp://127.0.0.1:${closed}`,
          SLACK_BOT_TOKEN: 'xoxb-revoked-token',
          SLACK_SIGNING_SECRET: 'secret',
          SLACK_API_URL: slackUrl,
          SMS_FROM: '+15550100',
          TEAMS_APP_ID: 'half-set-up',
        });
        assert.equal(broken.code, 1);
        assert.deepEqual(statuses(broken), {
          storage: 'ok',
          PUBLIC_URL: 'warn',
          SMTP_URL: 'fail',
          Slack: 'fail',
          Teams: 'fail',
          SMS: 'fail',
        });
        assert.match(broken.stdout, /invalid_auth/);
        assert.ok(!broken.stdout.includes('xoxb-revoked-token'), 'the token is never printed');
        // Teams: the bot's credentials, tried at the token endpoint of a stand-in for Microsoft.
        const teams = await startTeamsConnector();
        try {
          const signsIn = await approvals(storage, ['doctor', '--json'], teams.env);
          assert.equal(statuses(signsIn).Teams, 'ok');
          const refused = await approvals(storage, ['doctor', '--json'], {
            ...teams.env,
            TEAMS_APP_PASSWORD: 'a-wrong-secret',
          });
          assert.equal(statuses(refused).Teams, 'fail');
          assert.match(refused.stdout, /invalid_client/);
          assert.ok(!refused.stdout.includes('a-wrong-secret'), 'the secret is never printed');
        } finally {
          await teams.close();
        }
      } finally {
        slackApi.close();
        smtp.close();
      }
    });

    test('a DATA_DIR without a database is refused unless --init asks for one', async () => {
      const empty = await sqliteBackend.create();
      try {
        const refused = await approvals(empty, ['workspace', 'create', 'fresh', '--name', 'Fresh']);
        assert.equal(refused.code, 1);
        assert.equal(
          refused.stderr,
          `approvals: no database in DATA_DIR ${empty.env.DATA_DIR}: set DATA_DIR (or DATABASE_URL) to the service's, or pass --init to make a new one here\n`,
        );
        assert.ok(!existsSync(join(empty.env.DATA_DIR, 'approvals.db')), 'nothing was made');
        const made = await approvals(empty, [
          'workspace',
          'create',
          'fresh',
          '--name',
          'Fresh',
          '--init',
          '--json',
        ]);
        assert.equal(made.code, 0, made.stderr);
        assert.equal(jsonOut(made).slug, 'fresh');
      } finally {
        await empty.drop();
      }
    });

    test('--help: every command, or one command with its options', async () => {
      const all = await approvals(storage, ['--help']);
      assert.equal(all.code, 0);
      assert.match(all.stdout, /^usage: approvals <command>/);
      assert.match(all.stdout, /webhook redeliver/);
      const apply = await approvals(storage, ['apply', '--help']);
      assert.equal(apply.code, 0);
      assert.match(
        apply.stdout,
        /^usage: approvals apply --workspace <slug> -f <file.yaml\|file.json> \[--expect-version <n>\]\n\n/,
      );
      const keys = await approvals(storage, ['keys', '--help']);
      assert.deepEqual(
        keys.stdout
          .split('\n')
          .filter((line) => line.startsWith('usage: '))
          .map((line) => line.split(' ').slice(2, 4).join(' ')),
        ['keys create', 'keys revoke'],
      );
    });

    test('what is not found is named, with where it was looked for', async () => {
      const workspace = await approvals(storage, ['export', '--workspace', 'nowhere']);
      assert.equal(workspace.code, 1);
      assert.equal(
        workspace.stderr,
        `approvals: workspace nowhere not found in the ${storage.env.DATABASE_URL ? 'PostgreSQL database of DATABASE_URL' : `SQLite database in DATA_DIR ${storage.env.DATA_DIR}`}\n`,
      );
      const member = await approvals(storage, [
        'users',
        'invite',
        '--workspace',
        slug,
        '--email',
        'nobody@acme.test',
      ]);
      assert.equal(member.code, 1);
      assert.match(
        member.stderr,
        new RegExp(`^approvals: member nobody@acme.test not found in workspace ${slug}: `),
      );
    });

    test(
      'on a Node.js older than 24 the command says so instead of failing to load',
      { skip: OLD_NODE ? undefined : 'no Node.js older than 24 at /usr/bin/node' },
      () => {
        const old = spawnSync(OLD_NODE!, [join(ROOT, 'bin/approvals.js'), '--help'], { encoding: 'utf8' });
        assert.equal(old.status, 2);
        assert.match(old.stderr, /^approvals: needs Node.js 24 or later, and this is v\d+/);
      },
    );
  });
}
