import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Every address a host name resolves to (both families). Injected in tests: no real DNS there. */
export type HostResolver = (hostname: string) => Promise<string[]>;

/** The system resolver (getaddrinfo, as fetch itself will use): every A and AAAA answer. */
export const systemHostResolver: HostResolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Address ranges a peer added over HTTP may not point into (IANA special-purpose registries for
 * IPv4 and IPv6): otherwise anyone allowed to add a peer makes the relay fetch from the host's own
 * loopback, the LAN or a cloud metadata service (169.254.169.254) — server-side request forgery.
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) match the IPv4 ranges (BlockList does that).
 */
const refusedRanges: ReadonlyArray<{ what: string; net: string; prefix: number; family: 'ipv4' | 'ipv6' }> = [
  { what: 'loopback', net: '127.0.0.0', prefix: 8, family: 'ipv4' },
  { what: 'loopback', net: '::1', prefix: 128, family: 'ipv6' },
  { what: 'unspecified ("this host")', net: '0.0.0.0', prefix: 8, family: 'ipv4' },
  { what: 'unspecified ("this host")', net: '::', prefix: 128, family: 'ipv6' },
  { what: 'private (RFC 1918)', net: '10.0.0.0', prefix: 8, family: 'ipv4' },
  { what: 'private (RFC 1918)', net: '172.16.0.0', prefix: 12, family: 'ipv4' },
  { what: 'private (RFC 1918)', net: '192.168.0.0', prefix: 16, family: 'ipv4' },
  { what: 'shared address space (carrier-grade NAT)', net: '100.64.0.0', prefix: 10, family: 'ipv4' },
  { what: 'link-local (cloud metadata services live here)', net: '169.254.0.0', prefix: 16, family: 'ipv4' },
  { what: 'link-local', net: 'fe80::', prefix: 10, family: 'ipv6' },
  { what: 'site-local (deprecated)', net: 'fec0::', prefix: 10, family: 'ipv6' },
  { what: 'unique local (private)', net: 'fc00::', prefix: 7, family: 'ipv6' },
  { what: 'IETF protocol assignments', net: '192.0.0.0', prefix: 24, family: 'ipv4' },
  { what: 'documentation', net: '192.0.2.0', prefix: 24, family: 'ipv4' },
  { what: 'documentation', net: '198.51.100.0', prefix: 24, family: 'ipv4' },
  { what: 'documentation', net: '203.0.113.0', prefix: 24, family: 'ipv4' },
  { what: 'documentation', net: '2001:db8::', prefix: 32, family: 'ipv6' },
  { what: 'benchmarking', net: '198.18.0.0', prefix: 15, family: 'ipv4' },
  { what: 'multicast', net: '224.0.0.0', prefix: 4, family: 'ipv4' },
  { what: 'multicast', net: 'ff00::', prefix: 8, family: 'ipv6' },
  { what: 'reserved', net: '240.0.0.0', prefix: 4, family: 'ipv4' },
  { what: 'IPv4-compatible (deprecated)', net: '::', prefix: 96, family: 'ipv6' },
  { what: 'discard-only', net: '100::', prefix: 64, family: 'ipv6' },
];

const rangeLists = refusedRanges.map((r) => {
  const list = new BlockList();
  list.addSubnet(r.net, r.prefix, r.family);
  return { what: r.what, list };
});

/** Which refused range holds the IP address `address`, or null when it is a public address. */
export function nonPublicRange(address: string): string | null {
  const family = isIP(address);
  if (family === 0) throw new TypeError(`not an IP address: ${address}`);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const r of rangeLists) if (r.list.check(address, type)) return r.what;
  return null;
}

/**
 * Why `url` may not become a peer added over HTTP, or null when every address its host resolves to
 * is public. Literal IPs are checked as they are; `localhost` and `*.localhost` are loopback by
 * definition (RFC 6761); a name is resolved with `resolve` and refused when any answer is not
 * public (an attacker's name may answer both). A name that does not resolve is refused too: it
 * cannot be checked.
 */
export async function peerTargetProblem(url: string, resolve: HostResolver): Promise<string | null> {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is a loopback name`;
  if (isIP(host) !== 0) {
    const range = nonPublicRange(host);
    return range === null ? null : `${host} is a ${range} address`;
  }
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    return `${host} does not resolve${typeof code === 'string' ? ` (${code})` : ''}, so it cannot be checked`;
  }
  if (addresses.length === 0) return `${host} does not resolve, so it cannot be checked`;
  for (const address of addresses) {
    const range = isIP(address) === 0 ? 'malformed' : nonPublicRange(address);
    if (range !== null) return `${host} resolves to ${address}, a ${range} address`;
  }
  return null;
}
