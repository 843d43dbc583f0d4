/**
 * Where the service may send requests on a user's behalf: never into its own network (SSRF), unless
 * the operator allows it with ALLOW_PRIVATE_TARGETS.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';

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

/**
 * A DNS lookup for outgoing connections that drops internal addresses, so the address actually
 * connected to is checked: a name cannot pass `checkTarget` and then be re-pointed inside (DNS
 * rebinding). Literal IPs never go through a lookup; `checkTarget` covers them.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 4);
      const list = addresses as LookupAddress[];
      const allowed = allowPrivate ? list : list.filter((entry) => !isInternalAddress(entry.address));
      if (allowed.length === 0) return callback(new Error('internal address refused'), '', 4);
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/**
 * `fetch` for requests to user-given servers (MCP upstreams): every connection goes through
 * `guardedLookup`, and redirects are refused (they could carry the upstream's credentials elsewhere).
 */
export function guardedFetch(allowPrivate: boolean) {
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(allowPrivate) } });
  const fetch = ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, {
      ...(init as object),
      redirect: 'error',
      dispatcher,
    })) as unknown as typeof globalThis.fetch;
  // At shutdown: streams still open (a session's GET stream) end with it.
  return { fetch, close: () => dispatcher.destroy() };
}
