/**
 * A PostgreSQL cluster of a test's own, which the test may crash: `initdb` into a temporary directory,
 * `pg_ctl start` on a free port of 127.0.0.1 (trust authentication, the socket in the directory),
 * `pg_ctl stop -m immediate` for a crash (no checkpoint: the next start recovers from the WAL), and a
 * start again on the same port and data. Durability settings stay at their defaults (fsync and
 * synchronous_commit on): what is tested is what a commit promises.
 *
 * initdb and postgres refuse to run as root: as root (CI) they run as the `postgres` OS user through
 * `runuser`, and the directory is that user's; as anyone else, as that user. `PG_BIN` names the
 * directory of the binaries; otherwise the newest /usr/lib/postgresql/<version>/bin.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Storage } from './backends.ts';
import { freePort } from './mcp-upstream.ts';
import { until } from './wait.ts';

function findBin(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => /^\d+(\.\d+)?$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  return versions.map((version) => join(root, version, 'bin')).find((bin) => existsSync(join(bin, 'initdb')));
}

const BIN = findBin();
const AS_ROOT = process.getuid?.() === 0;
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser', '/bin/runuser'].find(existsSync);

/** The postgres OS user's uid and gid (as root only: the cluster's directory must be theirs). */
function postgresUser(): { uid: number; gid: number } | undefined {
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
const OWNER = AS_ROOT ? postgresUser() : undefined;

/** Why a private cluster cannot be run here, if it cannot (the test that needs one is skipped). */
export const privatePostgresSkip: string | undefined = !BIN
  ? 'no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/<version>/bin and PG_BIN unset: PostgreSQL crash rounds skipped'
  : !['initdb', 'pg_ctl', 'postgres'].every((name) => existsSync(join(BIN, name)))
    ? `initdb, pg_ctl or postgres missing in ${BIN}: PostgreSQL crash rounds skipped`
    : AS_ROOT && !RUNUSER
      ? 'running as root without runuser (initdb and postgres refuse root): PostgreSQL crash rounds skipped'
      : AS_ROOT && !OWNER
        ? 'running as root without a postgres OS user to run initdb and postgres: PostgreSQL crash rounds skipped'
        : undefined;

/** `program args…` from the cluster's directory, as the postgres user when we are root. */
function command(program: string, args: string[]): [string, string[]] {
  const path = join(BIN!, program);
  return AS_ROOT ? [RUNUSER!, ['-u', 'postgres', '--', path, ...args]] : [path, args];
}

function run(dir: string, program: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const [file, argv] = command(program, args);
  return new Promise((resolve, reject) => {
    execFile(file, argv, { cwd: dir, timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${program} ${args.join(' ')}: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** Storage for a service on this cluster (its own DATA_DIR); `drop` removes only that directory. */
  storage(): Storage;
  /** A crash: `pg_ctl stop -m immediate`, back once the postmaster is gone. */
  crashStop(): Promise<void>;
  /** Starts it again on the same port and data, back once it accepts connections. */
  restart(): Promise<void>;
  /** The server's log, for failure messages. */
  log(): string;
  /** Stops it (immediately, whatever its state) and removes its directory. Never throws. */
  cleanup(): Promise<void>;
}

/** initdb, then start; the caller must call `cleanup` (in a finally or an after hook). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  if (privatePostgresSkip) throw new Error(privatePostgresSkip);
  const dir = mkdtempSync(join(tmpdir(), 'approvals-pg-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'postgres.log');
  const serviceDirs: string[] = [];
  if (OWNER) chownSync(dir, OWNER.uid, OWNER.gid);
  let port = 0;

  // Should the test process end without cleaning up (killed by the runner), the cluster goes with it.
  const stopNow = () => {
    const [file, argv] = command('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    spawnSync(file, argv, { cwd: dir, stdio: 'ignore', timeout: 30_000 });
    rmSync(dir, { recursive: true, force: true });
    for (const serviceDir of serviceDirs) rmSync(serviceDir, { recursive: true, force: true });
  };
  process.once('exit', stopNow);

  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '(no log)';
    }
  };

  const accepts = async () => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return undefined;
    } finally {
      await client.end().catch(() => {});
    }
  };

  const start = async () => {
    // -w: pg_ctl waits until the server accepts connections (or has failed); then we connect over TCP.
    await run(dir, 'pg_ctl', [
      '-D',
      data,
      '-l',
      logFile,
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${port} -k '${dir}' -c listen_addresses=127.0.0.1`,
      'start',
    ]);
    await until('the private PostgreSQL to accept connections on 127.0.0.1', accepts, 30_000);
  };

  const cleanup = async () => {
    process.off('exit', stopNow);
    await run(dir, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    for (const serviceDir of serviceDirs) rmSync(serviceDir, { recursive: true, force: true });
  };

  try {
    await run(dir, 'initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale']);
    // The free port may be taken between the probe and the start: try another one.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await start();
        break;
      } catch (error) {
        if (attempt >= 3 || !/already in use|could not bind|could not create any TCP/i.test(log()))
          throw error;
      }
    }
  } catch (error) {
    const text = log();
    await cleanup();
    throw new Error(`private PostgreSQL did not start: ${(error as Error).message}\n${text}`, {
      cause: error,
    });
  }

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    storage() {
      const serviceDir = mkdtempSync(join(tmpdir(), 'approvals-test-'));
      serviceDirs.push(serviceDir);
      return {
        env: { DATA_DIR: serviceDir, DATABASE_URL: url },
        drop: async () => rmSync(serviceDir, { recursive: true, force: true }),
      };
    },
    async crashStop() {
      await run(dir, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    async restart() {
      try {
        await start();
      } catch (error) {
        throw new Error(`private PostgreSQL did not start again: ${(error as Error).message}\n${log()}`, {
          cause: error,
        });
      }
    },
    log,
    cleanup,
  };
}
