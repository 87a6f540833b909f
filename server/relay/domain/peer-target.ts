import { lookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { type LookupFunction, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, type RequestInit as UndiciRequestInit, fetch as undiciFetch } from 'undici';

/** Every address a host name resolves to (both families). Injected in tests: no real DNS there. */
export type HostResolver = (hostname: string) => Promise<string[]>;

/** The system resolver (getaddrinfo, as fetch itself will use): every A and AAAA answer. */
export const systemHostResolver: HostResolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/*
 * Which addresses a peer added over HTTP may not be: otherwise anyone allowed to add a peer makes
 * the relay fetch from the host's own loopback, the LAN or a cloud metadata service
 * (169.254.169.254): server-side request forgery. The ranges are ipaddr.js's tables of the IANA
 * special-purpose registries (decision 0231); every range but global unicast is refused. These
 * names only say it the way a refusal reads.
 */
const ipv4RangeWhat: Record<string, string> = {
  unspecified: 'unspecified ("this host")',
  broadcast: 'reserved (limited broadcast)',
  multicast: 'multicast',
  linkLocal: 'link-local (cloud metadata services live here)',
  loopback: 'loopback',
  carrierGradeNat: 'shared address space (carrier-grade NAT)',
  private: 'private (RFC 1918)',
  reserved: 'reserved (documentation, benchmarking, IETF protocol assignments or future use)',
  as112: 'AS112 DNS sink',
  amt: 'AMT relay anycast',
};

const ipv6RangeWhat: Record<string, string> = {
  unspecified: 'unspecified ("this host")',
  loopback: 'loopback',
  linkLocal: 'link-local',
  multicast: 'multicast',
  uniqueLocal: 'unique local (private)',
  deprecatedSiteLocal: 'site-local (deprecated)',
  discard: 'discard-only',
  // 64:ff9b:1::/48 (RFC 8215): the operator picks where the IPv4 address sits, so it cannot be read
  // back; the translator is on someone's private network either way.
  rfc6052: 'local-use NAT64 (RFC 8215)',
  benchmarking: 'benchmarking',
  amt: 'AMT relay anycast',
  as112v6: 'AS112 DNS sink',
  reserved: 'reserved (documentation or IETF protocol assignments)',
};

/**
 * The IPv4 addresses an IPv6 address carries and that a connection to it really reaches: the
 * IPv4-mapped form (the kernel opens an IPv4 socket), IPv4-translated (SIIT), NAT64 through the
 * well-known prefix, 6to4 (the relay router behind 2002:V4ADDR::/48) and Teredo (its server and,
 * bit-inverted, its client). Null when the address is not one of these forms.
 */
function embeddedIpv4(address: ipaddr.IPv6): Array<{ ipv4: ipaddr.IPv4; form: string }> | null {
  const p = address.parts;
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  switch (address.range() as string) {
    case 'ipv4Mapped':
      return [{ ipv4: v4(p[6]!, p[7]!), form: 'an IPv4-mapped address' }];
    case 'rfc6145':
      return [{ ipv4: v4(p[6]!, p[7]!), form: 'an IPv4-translated (SIIT) address' }];
    case 'rfc6052':
      // Only the well-known prefix 64:ff9b::/96 puts the IPv4 address in the last 32 bits.
      return address.match(ipaddr.IPv6.parse('64:ff9b::'), 96) ? [{ ipv4: v4(p[6]!, p[7]!), form: 'a NAT64 address' }] : null;
    case '6to4':
      return [{ ipv4: v4(p[1]!, p[2]!), form: 'a 6to4 address' }];
    case 'teredo':
      return [
        { ipv4: v4(p[2]!, p[3]!), form: 'a Teredo address (its server)' },
        { ipv4: v4(~p[6]! & 0xffff, ~p[7]! & 0xffff), form: 'a Teredo address (its client)' },
      ];
    default:
      return null;
  }
}

function ipv4Problem(address: ipaddr.IPv4): string | null {
  const range = address.range() as string;
  return range === 'unicast' ? null : (ipv4RangeWhat[range] ?? `special-purpose (${range})`);
}

function ipv6Problem(address: ipaddr.IPv6): string | null {
  const embedded = embeddedIpv4(address);
  if (embedded !== null) {
    for (const { ipv4, form } of embedded) {
      const problem = ipv4Problem(ipv4);
      if (problem !== null) return `${problem} (${ipv4.toString()} inside ${form})`;
    }
    return null;
  }
  const range = address.range() as string;
  if (range !== 'unicast') return ipv6RangeWhat[range] ?? `special-purpose (${range})`;
  const p = address.parts;
  // ::a.b.c.d is deprecated (RFC 4291 2.5.5.1) and nothing routes it; refused whatever it carries.
  if (p.slice(0, 6).every((part) => part === 0)) return 'IPv4-compatible (deprecated)';
  // ipaddr.js calls everything outside its special ranges unicast; only 2000::/3 is allocated for it.
  if (!address.match(ipaddr.IPv6.parse('2000::'), 3)) return 'not global unicast (outside 2000::/3)';
  return null;
}

/**
 * Which refused range holds the IP address `address` (either family), or null when it is a public
 * address. IPv6 forms that carry an IPv4 address are judged by what they carry.
 */
export function nonPublicRange(address: string): string | null {
  const family = isIP(address);
  if (family === 0) throw new TypeError(`not an IP address: ${address}`);
  if (family === 4) return ipv4Problem(ipaddr.IPv4.parse(address));
  // Through the URL parser first (the one fetch uses): it writes the address in hex groups, and
  // ipaddr.js 2.5 reads the dotted ::a.b.c.d (IPv4-compatible) as ::ffff:a.b.c.d (IPv4-mapped).
  const canonical = new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1);
  return ipv6Problem(ipaddr.IPv6.parse(canonical));
}

/** The host of `url` as the URL parser (and so fetch) reads it: no brackets, no trailing dot, lower case. */
function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

/**
 * Why `url` may not become a peer added over HTTP, or null when every address its host resolves to
 * is public. Literal IPs are checked as they are; `localhost` and `*.localhost` are loopback by
 * definition (RFC 6761); a name is resolved with `resolve` and refused when any answer is not
 * public (an attacker's name may answer both). A name that does not resolve is refused too: it
 * cannot be checked.
 */
export async function peerTargetProblem(url: string, resolve: HostResolver): Promise<string | null> {
  const host = hostOf(url);
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

/** A connection refused because of the address it would reach (code `EPEERTARGET`). */
export class PeerAddressRefused extends Error {
  readonly code = 'EPEERTARGET';
}

/**
 * A `lookup` for sockets (net.connect, undici's `connect` option) that resolves with `resolve` and
 * fails when any answer is not public, so the address checked is the address connected to: no
 * window for a name that answers a public address to the check and loopback to the connection (DNS
 * rebinding). Honours `options.all` and `options.family` as `dns.lookup` does.
 */
export function publicOnlyLookup(resolve: HostResolver, problemOf: (address: string) => string | null = nonPublicRange): LookupFunction {
  return (hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname).then(
      (answers) => {
        for (const address of answers) {
          const range = isIP(address) === 0 ? 'malformed' : problemOf(address);
          if (range !== null) {
            callback(new PeerAddressRefused(`not connecting to ${hostname}: it resolves to ${address}, a ${range} address`), '');
            return;
          }
        }
        const wanted = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
        const usable = answers.map((address) => ({ address, family: isIP(address) })).filter((a) => wanted === 0 || a.family === wanted);
        const first = usable[0];
        if (first === undefined) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
          return;
        }
        if (options.all === true) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/** Outbound HTTP for federation whose connections to untrusted peers reach public addresses only. */
export interface PeerFetch {
  fetch: typeof fetch;
  /** Closes the pooled connections. */
  close(): Promise<void>;
}

/**
 * `fetch` for federation (undici's, with its own connection pool) that refuses to connect to a
 * non-public address unless `trusted(url)` (configured peers, `allowPrivatePeers`). Names are
 * checked by `publicOnlyLookup` on the connection itself; literal IPs, which sockets never look up,
 * are checked here, as the URL parser reads them (`http://2130706433/` is 127.0.0.1). Complements
 * `peerTargetProblem` (the clear 403 and the check before each probe): this is the one that holds
 * when a name changes its answer in between.
 */
export function publicPeerFetch(options: {
  trusted: (url: string) => boolean;
  resolveHost?: HostResolver;
  /** Why an address may not be connected to, or null; default `nonPublicRange` (tests narrow it to reach a loopback server). */
  addressProblem?: (address: string) => string | null;
}): PeerFetch {
  const problemOf = options.addressProblem ?? nonPublicRange;
  const guarded = new Agent({ connect: { lookup: publicOnlyLookup(options.resolveHost ?? systemHostResolver, problemOf) } });
  const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const undiciInit = init as UndiciRequestInit | undefined;
    if (options.trusted(url)) return (await undiciFetch(url, undiciInit)) as unknown as Response;
    const host = hostOf(url);
    const range = isIP(host) === 0 ? null : problemOf(host);
    if (range !== null) throw new PeerAddressRefused(`not connecting to ${host}: a ${range} address`);
    try {
      return (await undiciFetch(url, { ...undiciInit, dispatcher: guarded })) as unknown as Response;
    } catch (err) {
      // fetch says only "fetch failed"; the refusal is the useful part (it ends up in GET /reach).
      const cause = (err as { cause?: unknown }).cause;
      throw cause instanceof PeerAddressRefused ? cause : err;
    }
  };
  return { fetch: guardedFetch as typeof fetch, close: () => guarded.close() };
}
