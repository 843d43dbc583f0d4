/**
 * Which addresses are internal: where the service may not send requests on a user's behalf (SSRF),
 * unless the operator allows it with ALLOW_PRIVATE_TARGETS. `http-client.ts` applies it to every
 * connection; `checkTarget` tells an admin at `apply` time.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** 2000::/3, the only IPv6 space allocated for the public Internet: anything outside it is not a public host. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/** An IPv4 address from two 16-bit words of an IPv6 address. */
const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

const isInternalIPv4 = (address: ipaddr.IPv4) => address.range() !== 'unicast';

/**
 * Classified with ipaddr.js's ranges (IANA special-purpose registries). An IPv6 address that carries
 * an IPv4 address is delivered to that address, so it is as internal as the IPv4 address it carries.
 */
function isInternalIPv6(address: ipaddr.IPv6): boolean {
  const [w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0] = address.parts;
  switch (address.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d (ipaddr.js reads the text ::a.b.c.d as this too)
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return isInternalIPv4(ipv4Of(w6, w7));
    case 'rfc6052':
      // NAT64: 64:ff9b::a.b.c.d, or the local-use 64:ff9b:1::/48, where the network's own translator
      // may put the IPv4 address elsewhere (RFC 6052 prefixes of /48 to /96): only the /96 form is read.
      return (w3 | w4 | w5) !== 0 || isInternalIPv4(ipv4Of(w6, w7));
    case '6to4': // 2002:aabb:ccdd::
      return isInternalIPv4(ipv4Of(w1, w2));
    case 'teredo': // 2001:0:server:flags:port:client, the client's address inverted
      return isInternalIPv4(ipv4Of(~w6 & 0xffff, ~w7 & 0xffff));
    case 'unicast':
      // IPv4-compatible, ::aabb:ccdd (deprecated, but some stacks still deliver it).
      if ((w0 | w1 | w2 | w3 | w4 | w5) === 0) return isInternalIPv4(ipv4Of(w6, w7));
      return !address.match(GLOBAL_UNICAST);
    default: // loopback, link-local, site-local, unique-local, multicast, discard, documentation, …
      return true;
  }
}

/**
 * Anything but a public unicast address: loopback, private, link-local, site-local, unique-local,
 * CGNAT, multicast, broadcast, discard, documentation, benchmarking, reserved and unallocated ranges,
 * and IPv6 addresses carrying such an IPv4 address (mapped, translated, NAT64, 6to4, Teredo).
 * Whatever is not an IP address is internal too.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  try {
    if (family === 4) return isInternalIPv4(ipaddr.IPv4.parse(address));
    if (family === 6) return isInternalIPv6(ipaddr.IPv6.parse(address));
  } catch {
    // an address Node reads and ipaddr.js does not: not one to connect to
  }
  return true;
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
 * A DNS lookup for outgoing connections that leaves internal addresses out, so a name with public and
 * internal addresses is connected to a public one. The HTTP client still checks the address each
 * socket is connected to (a name re-pointed inside after `checkTarget`, DNS rebinding, is refused there).
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
