import { describe, expect, it } from 'vitest';
import { httpUrl, wildcardAddressWarnings } from './cli-options.js';

describe('wildcardAddressWarnings (serve on every interface)', () => {
  it('warns for each service whose public URL is missing when listening on a wildcard address', () => {
    for (const host of ['0.0.0.0', '::', '::0', '[::]']) {
      const warnings = wildcardAddressWarnings(host, { relay: true });
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toContain('--public-url');
      expect(warnings[1]).toContain('--relay-public-url');
    }
  });

  it('says nothing once both URLs are given, on a named address, or for a relay that is not started', () => {
    expect(wildcardAddressWarnings('0.0.0.0', { publicUrl: 'https://bench.lab', relayPublicUrl: 'https://relay.lab', relay: true })).toEqual([]);
    expect(wildcardAddressWarnings('127.0.0.1', { relay: true })).toEqual([]);
    expect(wildcardAddressWarnings('0.0.0.0', { publicUrl: 'https://bench.lab', relay: false })).toEqual([]);
    expect(wildcardAddressWarnings('0.0.0.0', { publicUrl: '', relayPublicUrl: 'https://relay.lab', relay: true })).toHaveLength(1);
  });
});

describe('--replica-url', () => {
  it('takes an http(s) origin and refuses anything else with the value it got', () => {
    expect(httpUrl('http://10.0.0.5:8080/')).toBe('http://10.0.0.5:8080');
    expect(httpUrl('https://replica-1.lab')).toBe('https://replica-1.lab');
    for (const bad of ['replica-1:8080', 'ftp://replica-1', 'http://replica-1/bench', 'http://replica-1/?a=1']) {
      expect(() => httpUrl(bad)).toThrow(new RegExp(`expected an http:// or https:// address with no path or query, got "${bad.replace(/[?./]/g, '\\$&')}"`));
    }
  });
});
