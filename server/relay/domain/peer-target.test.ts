import { createServer } from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostResolver, PeerAddressRefused, nonPublicRange, peerTargetProblem, publicOnlyLookup, publicPeerFetch } from './peer-target.js';

const resolver =
  (answers: Record<string, string[]>): HostResolver =>
  (host) => {
    const found = answers[host];
    return found ? Promise.resolve(found) : Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
  };

describe('nonPublicRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.20.30.40', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['::ffff:192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd12:3456::1', 'unique local'],
    ['fc00::1', 'unique local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.7', 'documentation'],
    ['2001:db8::1', 'documentation'],
  ])('%s is %s', (address, what) => {
    expect(nonPublicRange(address)).toContain(what);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '172.15.255.255', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(nonPublicRange(address)).toBeNull();
  });

  it('every address in 10/8, 127/8, 169.254/16 and 192.168/16 is refused (property)', () => {
    const byte = fc.integer({ min: 0, max: 255 });
    fc.assert(
      fc.property(fc.constantFrom([10], [127], [169, 254], [192, 168]), fc.tuple(byte, byte, byte), (prefix, rest) => {
        const address = [...prefix, ...rest].slice(0, 4).join('.');
        expect(nonPublicRange(address)).not.toBeNull();
      }),
    );
  });

  it('refuses something that is not an address', () => {
    expect(() => nonPublicRange('example.org')).toThrow(TypeError);
  });
});

describe('peerTargetProblem', () => {
  const resolve = resolver({ 'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'], 'rebind.example': ['93.184.215.14', '10.0.0.5'], 'empty.example': [] });

  it('accepts a name whose every answer is public', async () => {
    expect(await peerTargetProblem('https://public.example/api', resolve)).toBeNull();
    expect(await peerTargetProblem('http://93.184.215.14:8081', resolve)).toBeNull();
  });

  it.each([
    ['http://127.0.0.1:8081', '127.0.0.1 is a loopback address'],
    ['http://[::1]:8081', 'loopback'],
    ['http://[::ffff:7f00:1]/', 'loopback'],
    ['http://2130706433/', '127.0.0.1 is a loopback address'], // the URL parser turns the decimal form into 127.0.0.1
    ['http://0x7f.1/', 'loopback'],
    ['http://localhost:3000', 'localhost is a loopback name'],
    ['http://LOCALHOST./', 'loopback name'],
    ['http://api.localhost', 'loopback name'],
    ['http://169.254.169.254/latest/meta-data', 'link-local'],
    ['http://rebind.example', 'rebind.example resolves to 10.0.0.5, a private (RFC 1918) address'],
    ['http://nowhere.example', 'nowhere.example does not resolve (ENOTFOUND)'],
    ['http://empty.example', 'does not resolve'],
  ])('%s: %s', async (url, why) => {
    expect(await peerTargetProblem(url, resolve)).toContain(why);
  });

  it('never asks the resolver about literal addresses or localhost', async () => {
    const asked: string[] = [];
    const spy: HostResolver = (host) => {
      asked.push(host);
      return Promise.resolve(['93.184.215.14']);
    };
    await peerTargetProblem('http://10.0.0.1', spy);
    await peerTargetProblem('http://[fe80::1]', spy);
    await peerTargetProblem('http://localhost', spy);
    expect(asked).toEqual([]);
  });
});

/** IPv4 as the two 16-bit groups IPv6 text uses, e.g. 127.0.0.1 -> ['7f00', '1']. */
const groups = (v4: number[]): [string, string] => [((v4[0]! << 8) | v4[1]!).toString(16), ((v4[2]! << 8) | v4[3]!).toString(16)];
const inverted = (v4: number[]) => groups(v4.map((b) => 255 - b));

/** Every IPv6 form that carries an IPv4 address a connection really reaches (decision 0231). */
const embeddings: Record<string, (v4: number[]) => string> = {
  'IPv4-mapped, dotted': (v4) => `::ffff:${v4.join('.')}`,
  'IPv4-mapped, hex': (v4) => `::ffff:${groups(v4).join(':')}`,
  'IPv4-translated (SIIT)': (v4) => `::ffff:0:${groups(v4).join(':')}`,
  'NAT64 well-known prefix': (v4) => `64:ff9b::${groups(v4).join(':')}`,
  'NAT64, dotted': (v4) => `64:ff9b::${v4.join('.')}`,
  '6to4': (v4) => `2002:${groups(v4).join(':')}:1:2:3:4:5`,
  'Teredo server': (v4) => `2001:0:${groups(v4).join(':')}:8000:f227:${inverted([8, 8, 4, 4]).join(':')}`,
  'Teredo client (bit-inverted)': (v4) => `2001:0:${groups([8, 8, 8, 8]).join(':')}:8000:f227:${inverted(v4).join(':')}`,
};

const byte = fc.integer({ min: 0, max: 255 });
/** An address in loopback, RFC 1918, link-local, CGNAT or "this network": never public. */
const nonPublicIpv4 = fc.oneof(
  fc.tuple(fc.constant(127), byte, byte, byte),
  fc.tuple(fc.constant(10), byte, byte, byte),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), byte, byte),
  fc.tuple(fc.constant(192), fc.constant(168), byte, byte),
  fc.tuple(fc.constant(169), fc.constant(254), byte, byte),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), byte, byte),
  fc.tuple(fc.constant(0), byte, byte, byte),
);
/** An address in a few /8s wholly allocated to public networks (Level 3, RIPE, ARIN, APNIC). */
const publicIpv4 = fc.tuple(fc.constantFrom(8, 9, 31, 45, 62, 81, 93, 151, 185, 203), byte, byte, byte).filter(([a, b]) => !(a === 203 && b === 0));

describe('IPv6 forms that embed an IPv4 address', () => {
  it.each([
    ['64:ff9b::7f00:1', 'loopback (127.0.0.1 inside a NAT64 address)'],
    ['2002:7f00:1::', 'loopback (127.0.0.1 inside a 6to4 address)'],
    ['::ffff:0:7f00:1', 'loopback (127.0.0.1 inside an IPv4-translated (SIIT) address)'],
    ['::ffff:127.0.0.1', 'loopback (127.0.0.1 inside an IPv4-mapped address)'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['::8.8.8.8', 'IPv4-compatible (deprecated)'],
    ['64:ff9b:1::a9fe:a9fe', 'local-use NAT64'],
    ['64:ff9b:1:a9fe:a9:fe00::', 'local-use NAT64'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback (127.0.0.1 inside a Teredo address (its client))'],
    ['2001:0:a00:1:8000:63bf:3fff:fdd2', 'private (RFC 1918) (10.0.0.1 inside a Teredo address (its server))'],
    ['5f00::1', 'special-purpose (segmentRouting)'],
    ['4000::1', 'not global unicast'],
  ])('%s is %s', (address, what) => {
    expect(nonPublicRange(address)).toContain(what);
  });

  it.each(['64:ff9b::808:808', '2002:808:808::1', '::ffff:0:808:808', '2001:0:4136:e378:8000:63bf:f7f7:fbfb'])('%s (a public IPv4 inside) is public', (address) => {
    expect(nonPublicRange(address)).toBeNull();
  });

  it.each(Object.entries(embeddings))('%s: every loopback, private, link-local, CGNAT and "this network" IPv4 inside is refused (property)', (_form, embed) => {
    fc.assert(
      fc.property(nonPublicIpv4, (v4) => {
        expect(nonPublicRange(v4.join('.'))).not.toBeNull();
        expect(nonPublicRange(embed(v4))).toContain(`${v4.join('.')} inside`);
      }),
    );
  });

  it.each(Object.entries(embeddings))('%s: a public IPv4 inside is accepted (property)', (_form, embed) => {
    fc.assert(
      fc.property(publicIpv4, (v4) => {
        expect(nonPublicRange(embed(v4))).toBeNull();
      }),
    );
  });

  it('forms nothing routes are refused whatever they carry: IPv4-compatible and local-use NAT64 (property)', () => {
    fc.assert(
      fc.property(fc.oneof(nonPublicIpv4, publicIpv4), fc.integer({ min: 0, max: 0xffff }), (v4, subnet) => {
        expect(nonPublicRange(`::${v4.join('.')}`)).toMatch(/IPv4-compatible|unspecified|loopback/);
        expect(nonPublicRange(`64:ff9b:1:${subnet.toString(16)}::${groups(v4).join(':')}`)).toBe('local-use NAT64 (RFC 8215)');
      }),
    );
  });

  it.each([
    ['http://[64:ff9b::7f00:1]/', '64:ff9b::7f00:1 is a loopback'],
    ['http://[2002:7f00:1::]/', '2002:7f00:1:: is a loopback'],
    ['http://[::ffff:0:7f00:1]/', 'loopback'],
    ['http://[::127.0.0.1]/', 'IPv4-compatible'],
    ['http://[64:ff9b:1::a9fe:a9fe]/', 'local-use NAT64'],
  ])('peerTargetProblem(%s): %s', async (url, why) => {
    expect(await peerTargetProblem(url, resolver({}))).toContain(why);
  });

  it('a name answering an embedded loopback address is refused', async () => {
    expect(await peerTargetProblem('http://nat64.example', resolver({ 'nat64.example': ['64:ff9b::7f00:1'] }))).toContain('nat64.example resolves to 64:ff9b::7f00:1, a loopback');
  });
});

describe('publicOnlyLookup (the check on the address connected to)', () => {
  const lookup = (resolve: HostResolver, options: { all?: boolean; family?: number }) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((done) => {
      publicOnlyLookup(resolve)('peer.example', options, (err, address, family) => done({ err, address, family }));
    });

  it('answers the public addresses, one or all, of the family asked for', async () => {
    const resolve = resolver({ 'peer.example': ['93.184.215.14', '2606:4700:4700::1111'] });
    expect(await lookup(resolve, {})).toEqual({ err: null, address: '93.184.215.14', family: 4 });
    expect(await lookup(resolve, { family: 6 })).toEqual({ err: null, address: '2606:4700:4700::1111', family: 6 });
    expect(await lookup(resolve, { all: true })).toEqual({ err: null, address: [{ address: '93.184.215.14', family: 4 }, { address: '2606:4700:4700::1111', family: 6 }], family: undefined });
  });

  it.each([['127.0.0.1'], ['64:ff9b::a9fe:a9fe'], ['2002:c0a8:101::1']])('fails when any answer is %s', async (bad) => {
    const { err } = await lookup(resolver({ 'peer.example': ['93.184.215.14', bad] }), { all: true });
    expect(err).toBeInstanceOf(PeerAddressRefused);
    expect(err?.message).toContain(`peer.example: it resolves to ${bad}`);
  });

  it('passes a resolver failure on', async () => {
    expect((await lookup(resolver({}), {})).err?.code).toBe('ENOTFOUND');
  });
});

describe('publicPeerFetch (real sockets to a loopback server)', () => {
  let server: ReturnType<typeof createServer>;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('{"ok":true}'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('never connects to a name that answers loopback at connection time, though it answered public before (DNS rebinding)', async () => {
    const answers = ['93.184.215.14'];
    const resolve: HostResolver = () => Promise.resolve([...answers]);
    expect(await peerTargetProblem(`http://rebind.example:${port}`, resolve)).toBeNull();
    answers[0] = '127.0.0.1';
    const peer = publicPeerFetch({ trusted: () => false, resolveHost: resolve });
    try {
      const before = connections;
      await expect(peer.fetch(`http://rebind.example:${port}/health`)).rejects.toThrow(/not connecting to rebind\.example: it resolves to 127\.0\.0\.1, a loopback address/);
      expect(connections).toBe(before);
    } finally {
      await peer.close();
    }
  });

  it.each(['127.0.0.1', '[::ffff:127.0.0.1]', '2130706433'])('never connects to the literal %s', async (host) => {
    const peer = publicPeerFetch({ trusted: () => false, resolveHost: () => Promise.reject(new Error('literals are never resolved')) });
    try {
      const before = connections;
      await expect(peer.fetch(`http://${host}:${port}/health`)).rejects.toThrow(PeerAddressRefused);
      expect(connections).toBe(before);
    } finally {
      await peer.close();
    }
  });

  it('connects to a trusted (configured) peer on loopback', async () => {
    const peer = publicPeerFetch({ trusted: (url) => url.startsWith(`http://127.0.0.1:${port}/`) });
    try {
      const answer = await peer.fetch(`http://127.0.0.1:${port}/health`);
      expect(await answer.json()).toEqual({ ok: true });
    } finally {
      await peer.close();
    }
  });

  it('connects through the guarded lookup, every family asked for, when the answers pass the check', async () => {
    // A test cannot reach a public address, so the check is narrowed to "only 127.0.0.1 is fine":
    // the socket path is the production one (undici, net.connect with autoSelectFamily, this lookup).
    const onlyLoopbackV4 = (address: string) => (address === '127.0.0.1' ? null : 'not the test server');
    const peer = publicPeerFetch({ trusted: () => false, resolveHost: () => Promise.resolve(['127.0.0.1']), addressProblem: onlyLoopbackV4 });
    try {
      const before = connections;
      const answer = await peer.fetch(`http://allowed.example:${port}/health`);
      expect(await answer.json()).toEqual({ ok: true });
      expect(connections).toBe(before + 1);
      await expect(peer.fetch(`http://[::1]:${port}/health`)).rejects.toThrow('not connecting to ::1: a not the test server address');
    } finally {
      await peer.close();
    }
  });
});
