/**
 * Where the service may send requests on a user's behalf: never into its own network (SSRF), unless
 * the operator allows it with ALLOW_PRIVATE_TARGETS.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}

/**
 * Loopback, private, link-local, unique-local, CGNAT, multicast and unspecified addresses. IPv4
 * rules also catch IPv4-mapped IPv6 addresses in any spelling (`::ffff:127.0.0.1`, `::ffff:7f00:1`).
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return INTERNAL.check(address, family === 4 ? 'ipv4' : 'ipv6');
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
