import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import { StorageUnavailableError } from '../store/db.ts';
import { errorHandler } from './errors.ts';

const MARKER = 'secret-payload-value-7731';

function appWithLog() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = Fastify({ logger: { level: 'info', stream } });
  app.setErrorHandler(errorHandler(() => 'http://x/docs/holds'));
  app.get('/boom', async () => {
    throw new TypeError(`cannot read ${MARKER}`);
  });
  app.get('/down', async () => {
    throw new StorageUnavailableError(new Error(`connect failed near ${MARKER}`));
  });
  return { app, lines };
}

test('an unexpected error is a 500 with a referenceId that is also in the log line, and no value', async () => {
  const { app, lines } = appWithLog();
  const answer = await app.inject({ method: 'GET', url: '/boom' });
  assert.equal(answer.statusCode, 500);
  const body = answer.json();
  assert.deepEqual(Object.keys(body).sort(), ['error', 'referenceId']);
  assert.equal(body.error, 'internal');
  const logged = lines.find((line) => line.includes(body.referenceId));
  assert.ok(logged, 'the referenceId is logged');
  assert.match(logged, /TypeError/);
  assert.ok(!lines.join('').includes(MARKER), 'no log line repeats the value');
});

test('storage unavailable is a 503 with Retry-After, and the cause is logged without its message', async () => {
  const { app, lines } = appWithLog();
  const answer = await app.inject({ method: 'GET', url: '/down' });
  assert.equal(answer.statusCode, 503);
  assert.deepEqual(answer.json(), { error: 'unavailable' });
  assert.equal(answer.headers['retry-after'], '5');
  assert.ok(!lines.join('').includes(MARKER));
});

test('a full disk is logged as such: SQLite names its own result code, never the value', async () => {
  const db = new DatabaseSync(':memory:');
  db.exec('CREATE TABLE t (v TEXT); PRAGMA max_page_count = 2');
  let full: unknown;
  try {
    db.prepare('INSERT INTO t (v) VALUES (?)').run(`${MARKER}${'x'.repeat(100_000)}`);
  } catch (error) {
    full = error;
  }
  const { app, lines } = appWithLog();
  app.get('/full', async () => {
    throw new StorageUnavailableError(full);
  });
  assert.equal((await app.inject({ method: 'GET', url: '/full' })).statusCode, 503);
  assert.match(lines.join(''), /database or disk is full/);
  assert.ok(!lines.join('').includes(MARKER));
});
