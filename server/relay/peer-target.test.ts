import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type HostResolver, nonPublicRange, peerTargetProblem } from './peer-target.js';

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
