/**
 * Where the service may send requests on a user's behalf: never into its own network (SSRF), unless
 * the operator allows it with ALLOW_PRIVATE_TARGETS.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** Loopback, private, link-local, unique-local, CGNAT and unspecified addresses. */
export function isInternalAddress(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) {
    const [a, b] = v4.split('.').map(Number) as [number, number];
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      a >= 224
    );
  }
  const v6 = address.toLowerCase();
  return (
    v6 === '::' ||
    v6 === '::1' ||
    v6.startsWith('fc') ||
    v6.startsWith('fd') ||
    v6.startsWith('fe8') ||
    v6.startsWith('fe9') ||
    v6.startsWith('fea') ||
    v6.startsWith('feb')
  );
}

/** Refuses a target (MCP upstream, webhook) whose name resolves to an internal address, unless the operator allows them. */
export async function checkTarget(url: string, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    throw new Error('cannot be resolved');
  }
  if (addresses.some(isInternalAddress)) {
    throw new Error(
      'resolves to an internal address (loopback, private or link-local; see ALLOW_PRIVATE_TARGETS)',
    );
  }
}
