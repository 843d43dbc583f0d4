/**
 * Random input for every Core API operation but POST /api/v1/holds (errors.test.ts has that one),
 * and for the widget's decision: never a 5xx, only the documented statuses, errors in the contract's
 * shape without a value of the request, and nothing stored by a refused request.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import fc from 'fast-check';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { backends } from './support/backends.ts';
import { type Answer, call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

/** A value no error may repeat. */
const MARKER = 'zq9MARKERzq9';
const RUNS = 80;

const TOOLS = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: delete_ledger, classification: deny }
  - { connection: SDK, tool: send_invoice, classification: approval }
`;

/** The code each error status carries (decisions.md, Errors). */
const CODES: Record<number, string> = {
  400: 'invalid_json',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_failed',
};

// Values, some of them carrying the marker.
const marked = fc
  .tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }))
  .map(([a, b]) => `${a}${MARKER}${b}`);
const text = fc.oneof(fc.constant(MARKER), marked, fc.string({ maxLength: 20 }));
const value = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(text, { maxLength: 3 }),
  fc.dictionary(text, fc.oneof(text, fc.integer()), { maxKeys: 3 }),
);
const alnum = (min: number, max: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9_-]{${min},${max}}$`));
const markedAscii = fc
  .tuple(fc.stringMatching(/^[\x20-\x7e]{0,15}$/), fc.stringMatching(/^[\x20-\x7e]{0,15}$/))
  .map(([a, b]) => `${a}${MARKER}${b}`.trim());

/** A path segment for :id: real references, well-formed unknown ones, and garbage (raw or encoded). */
const idOf = (known: string[]) =>
  fc
    .oneof(
      fc.constantFrom(...known),
      alnum(22, 64).map((rest) => `svc_pa_${rest}`),
      alnum(10, 40).map((rest) => `svc_pa_${MARKER}${rest}`),
      fc.oneof(marked, fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' })).map(encodeURIComponent),
      fc.stringMatching(/^[A-Za-z0-9%._~-]{0,30}$/).map((raw) => `${raw}${MARKER}`),
    )
    .filter((id) => id !== '.' && id !== '..');

/** A query string: known and unknown names, repeated at times, or a raw one with bad escapes. */
const queryOf = (names: string[], values: fc.Arbitrary<string>) =>
  fc
    .oneof(
      {
        weight: 4,
        arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...names), text), values), { maxLength: 5 }),
      },
      {
        weight: 1,
        arbitrary: fc.stringMatching(/^[A-Za-z0-9%&=_.+-]{0,30}$/).map((raw) => `${raw}${MARKER}`),
      },
    )
    .map((pairs) => {
      if (typeof pairs === 'string') return `?${pairs}`;
      const search = new URLSearchParams();
      for (const [name, given] of pairs) search.append(name, given);
      const query = search.toString();
      return query ? `?${query}` : '';
    });

/** A request body: JSON, no body at all, text that is not JSON, or a type other than JSON. */
type Body = { body?: unknown; raw?: string; headers?: Record<string, string> };
const bodyOf = (json: fc.Arbitrary<unknown>): fc.Arbitrary<Body> =>
  fc.oneof(
    { weight: 6, arbitrary: json.map((body) => ({ body })) },
    { weight: 1, arbitrary: fc.constant({}) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(`{${MARKER}}`, `{"verdict":"${MARKER}`, `[${MARKER}]`, `"${MARKER}`, 'nul')
        .map((raw) => ({ raw, headers: { 'content-type': 'application/json' } })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml'), marked)
        .map(([type, raw]) => ({ raw, headers: { 'content-type': type } })),
    },
  );

for (const backend of backends) {
  describe(`API fuzz on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let foreign: { workspaceId: string; holdId: string };
    before(async () => {
      t = await startTestService(backend);
      const other = await t.workspace({ config: TOOLS });
      const created = await call(t.url, 'POST', '/api/v1/holds', { key: other.key, body: submission() });
      foreign = { workspaceId: other.workspace.id, holdId: created.body.id };
    });
    after(() => t?.close());
    // Each property starts in a rate-limit window of its own.
    beforeEach(() => t.clock.advance(60_000));

    /** Stored state a refused request must leave alone: evidence, holds, decisions, still pending. */
    const snapshot = async (workspaceIds: string[]) => {
      const rows = [];
      for (const id of workspaceIds) {
        rows.push(
          await t.service.ctx.db.one(
            `SELECT (SELECT COUNT(*) FROM evidence WHERE workspace_id = $1) AS evidence,
                    (SELECT COUNT(*) FROM holds WHERE workspace_id = $1) AS holds,
                    (SELECT COUNT(*) FROM holds WHERE workspace_id = $1 AND status = 'pending') AS pending,
                    (SELECT COUNT(*) FROM hold_decisions d JOIN holds h ON h.id = d.hold_id
                      WHERE h.workspace_id = $1) AS decisions`,
            [id],
          ),
        );
      }
      return JSON.stringify(rows, (_key, n) => (typeof n === 'bigint' ? Number(n) : n));
    };

    /** A workspace with a pending, an allowed, a rule-rejected and an approved hold. */
    const scene = async () => {
      const { workspace, key } = await t.workspace({ config: TOOLS });
      const submit = async (tool: string) =>
        (await call(t.url, 'POST', '/api/v1/holds', { key, body: submission({ tool_name: tool }) })).body
          .id as string;
      const pending = await submit('send_invoice');
      const allowed = await submit('read_balance');
      const denied = await submit('delete_ledger');
      const approved = await submit('send_invoice');
      await decideAs(t, workspace.id, approved, 'approve');
      return { workspace, key, pending, decided: [allowed, denied, approved] };
    };

    /** An error answer in the contract's shape, with no trace of the marker anywhere. */
    const assertContractError = (answer: Answer, { docs = true } = {}) => {
      const code = CODES[answer.status];
      assert.ok(code, `undocumented error status ${answer.status}`);
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
      if (code === 'validation_failed') {
        const { error, detail, issues, docs: link, ...rest } = answer.body;
        assert.equal(error, 'validation_failed');
        assert.deepEqual(rest, {});
        assert.ok(Array.isArray(issues) && issues.length > 0, 'issues');
        for (const issue of issues) {
          assert.deepEqual(Object.keys(issue).sort(), ['field', 'message']);
          assert.equal(typeof issue.field, 'string');
          assert.equal(typeof issue.message, 'string');
        }
        assert.equal(detail, `${issues[0].field}: ${issues[0].message}`);
        if (docs || link !== undefined) assert.equal(link, `${t.url}/docs/holds`);
      } else {
        assert.deepEqual(answer.body, { error: code });
      }
      const everything = `${answer.text}\n${[...answer.headers.values()].join('\n')}`.toLowerCase();
      assert.ok(!everything.includes(MARKER.toLowerCase()), `echoed a value: ${answer.text}`);
    };

    /** Runs one request; a 5xx, an undocumented status, a bad error or a stored refusal fails. */
    const check = async (
      workspaceIds: string[],
      allowed: number[],
      send: () => Promise<Answer>,
      options: { docs?: boolean } = {},
    ) => {
      const before = await snapshot(workspaceIds);
      const answer = await send();
      assert.ok(answer.status < 500, `status ${answer.status}: ${answer.text}`);
      assert.ok(allowed.includes(answer.status), `status ${answer.status}: ${answer.text}`);
      if (answer.status >= 400) {
        assertContractError(answer, options);
        assert.equal(await snapshot(workspaceIds), before, 'a refused request changed stored state');
      }
      return answer;
    };

    test('GET /api/v1/holds/:id: random references (property)', async () => {
      const own = await scene();
      const ids = idOf([own.pending, ...own.decided, foreign.holdId]);
      await fc.assert(
        fc.asyncProperty(ids, async (id) => {
          const answer = await check([own.workspace.id, foreign.workspaceId], [200, 404], () =>
            call(t.url, 'GET', `/api/v1/holds/${id}`, { key: own.key }),
          );
          if (answer.status === 200) assert.equal(answer.body.id, id);
          if (id === foreign.holdId) assert.equal(answer.status, 404);
        }),
        { numRuns: RUNS },
      );
    });

    test('POST /api/v1/holds/:id/wait: random references, bodies and queries (property)', async () => {
      const own = await scene();
      const timeout = fc.oneof(
        fc.integer({ min: -5, max: 100 }),
        fc.double(),
        text,
        fc.constant(null),
        fc.constant('1'),
      );
      const body = bodyOf(
        fc.oneof(
          fc.record({ timeout_seconds: timeout, other: value }, { requiredKeys: [] }),
          fc.jsonValue(),
          value,
        ),
      );
      const query = queryOf(['timeout_seconds', 'timeout'], fc.oneof(text, fc.integer().map(String)));
      // Pending holds only with a 1 s timeout: every other wait answers at once.
      const request = fc.oneof(
        { weight: 20, arbitrary: fc.tuple(idOf([...own.decided, foreign.holdId]), body, query) },
        {
          weight: 1,
          arbitrary: query.map((q): [string, Body, string] => [
            own.pending,
            { body: { timeout_seconds: 1 } },
            q,
          ]),
        },
      );
      await fc.assert(
        fc.asyncProperty(request, async ([id, given, q]) => {
          const answer = await check([own.workspace.id, foreign.workspaceId], [200, 400, 404, 415, 422], () =>
            call(t.url, 'POST', `/api/v1/holds/${id}/wait${q}`, { key: own.key, ...given }),
          );
          if (answer.status === 200) assert.equal(answer.body.id, id);
          if (id === foreign.holdId) assert.notEqual(answer.status, 200);
        }),
        { numRuns: RUNS },
      );
    });

    test('GET /api/v1/audit/verify: random query parameters (property)', async () => {
      const own = await scene();
      const seq = fc.oneof(
        fc.integer({ min: -3, max: 20 }).map(String),
        fc.bigInt({ min: 0n, max: 10n ** 20n }).map(String),
        fc.constantFrom('', ' 5', '1e3', '0x10', 'Infinity', 'NaN', '1.5', '-0'),
        text,
      );
      const query = queryOf(['from_seq', 'to_seq'], seq);
      await fc.assert(
        fc.asyncProperty(query, async (q) => {
          const answer = await check([own.workspace.id], [200, 422], () =>
            call(t.url, 'GET', `/api/v1/audit/verify${q}`, { key: own.key }),
          );
          if (answer.status === 200) assert.equal(typeof answer.body.valid, 'boolean');
        }),
        { numRuns: RUNS },
      );
    });

    for (const kind of ['oversight', 'activity'] as const) {
      test(`GET /api/v1/reports/${kind}: random query parameters and Accept headers (property)`, async () => {
        const own = await scene();
        const date = fc
          .date({ noInvalidDate: true, min: new Date('1900-01-01'), max: new Date('2200-01-01') })
          .chain((d) => fc.constantFrom(d.toISOString(), d.toISOString().slice(0, 10)));
        const given = fc.oneof(
          date,
          fc.constantFrom('csv', 'pdf', 'PDF', 'xml', '', '2024-02-30', '2024-13-01', '+010000-01-01'),
          text,
          fc.string({ minLength: 195, maxLength: 210 }).map((long) => `${long}${MARKER}`),
        );
        const query = queryOf(['format', 'from', 'to', 'tool', 'agent'], given);
        const accept = fc.option(
          fc.oneof(
            fc.constantFrom(
              'application/pdf',
              'text/csv',
              'text/csv, application/pdf',
              'application/pdf;q=0.1, text/csv',
              '*/*',
              'application/json',
              '',
            ),
            markedAscii,
          ),
          { nil: undefined },
        );
        await fc.assert(
          fc.asyncProperty(query, accept, async (q, acceptHeader) => {
            const answer = await check([own.workspace.id], [200, 422], () =>
              call(t.url, 'GET', `/api/v1/reports/${kind}${q}`, {
                key: own.key,
                headers: acceptHeader === undefined ? {} : { accept: acceptHeader },
              }),
            );
            if (answer.status === 200) {
              assert.match(answer.headers.get('content-type') ?? '', /^(text\/csv|application\/pdf)/);
            }
          }),
          { numRuns: RUNS },
        );
      });
    }

    test('POST /widget/api/holds/:id/decision: random references and bodies (property)', async () => {
      const own = await scene();
      const pending = [own.pending];
      for (let i = 0; i < 5; i++) {
        const created = await call(t.url, 'POST', '/api/v1/holds', { key: own.key, body: submission() });
        pending.push(created.body.id);
      }
      const admin = (await findMemberByEmail(t.service.ctx.db, own.workspace.id, 'admin@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, admin);
      const comment = fc.oneof(
        text,
        value,
        fc.constant(undefined),
        fc.constant(`${'x'.repeat(2000)}${MARKER}`),
        fc.constant(`  ${MARKER}  `),
      );
      const verdict = fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('approve', 'reject') },
        { weight: 1, arbitrary: fc.oneof(fc.constantFrom('APPROVE', ''), value) },
      );
      const body = bodyOf(fc.oneof(fc.record({ verdict, comment }, { requiredKeys: [] }), fc.jsonValue()));
      await fc.assert(
        fc.asyncProperty(idOf([...pending, ...own.decided, foreign.holdId]), body, async (id, given) => {
          const answer = await check(
            [own.workspace.id, foreign.workspaceId],
            [200, 400, 404, 415, 422],
            () => call(t.url, 'POST', `/widget/api/holds/${id}/decision`, { key: token, ...given }),
            // The widget's own 422s have no docs link (not a Core API answer).
            { docs: false },
          );
          if (answer.status === 200) {
            assert.deepEqual(Object.keys(answer.body).sort(), ['outcome', 'status']);
            assert.ok(!answer.text.includes(MARKER), 'echoed a value');
          }
          if (id === foreign.holdId) assert.notEqual(answer.status, 200);
        }),
        { numRuns: RUNS },
      );
    });
  });
}
