/**
 * The storage backends every suite runs on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
 * Each test service gets storage of its own (a temporary directory, or a fresh schema).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface Storage {
  /** Settings that point a service at this storage. */
  env: { DATA_DIR: string; DATABASE_URL?: string };
  drop(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** Why this backend is skipped here, if it is. */
  skip?: string;
  create(): Promise<Storage>;
}

const postgresUrl = process.env.TEST_DATABASE_URL;

export const sqlite: Backend = {
  name: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'approvals-test-'));
    return { env: { DATA_DIR: dir }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  },
};

export const postgres: Backend = {
  name: 'postgres',
  skip: postgresUrl ? undefined : 'TEST_DATABASE_URL is not set: PostgreSQL suites skipped',
  async create() {
    const schema = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const url = new URL(postgresUrl!);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const dir = mkdtempSync(join(tmpdir(), 'approvals-test-'));
    return {
      env: { DATA_DIR: dir, DATABASE_URL: url.toString() },
      async drop() {
        const client = new pg.Client({ connectionString: postgresUrl });
        await client.connect();
        await client.query(`DROP SCHEMA ${schema} CASCADE`);
        await client.end();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const backends: Backend[] = [sqlite, postgres];
