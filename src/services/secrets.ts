/**
 * Sealing credentials stored in the database (MCP upstream headers) with AES-256-GCM. The key comes
 * from SECRETS_KEY, or from a key file made once under DATA_DIR (one instance on SQLite).
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface Sealer {
  seal(text: string): string;
  open(sealed: string): string;
  /** 32 bytes for one purpose, the same on every instance that shares the key (HMAC-SHA256 of it). */
  derive(purpose: string): Buffer;
}

/**
 * Writes a new key aside and links it into place: a process starting beside this one (a command
 * run next to another) never reads half a key, and of two that start at once one key wins and
 * both use it.
 */
function makeKeyFile(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const aside = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(aside, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(aside);
  }
}

export function loadSealer(options: { secretsKey?: string; dataDir: string }): Sealer {
  let key: Buffer;
  if (options.secretsKey) {
    key = Buffer.from(options.secretsKey, 'base64');
  } else {
    const file = join(options.dataDir, 'secrets.key');
    if (!existsSync(file)) makeKeyFile(file);
    key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  }
  if (key.length !== 32) throw new Error('SECRETS_KEY must be 32 bytes in base64');
  return {
    seal(text) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
      return [
        'v1',
        iv.toString('base64'),
        cipher.getAuthTag().toString('base64'),
        body.toString('base64'),
      ].join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('not a sealed value');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
    derive: (purpose) => createHmac('sha256', key).update(purpose).digest(),
  };
}
