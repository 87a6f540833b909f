import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Credentials } from './credentials.js';
import { loadOrCreateSecret } from '../../lifecycle/secret-file.js';
import { generateNodeKey } from '../../../core/relay/node-id.js';
import { RelayRefusal } from './relay-errors.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';

const data = tempDataDir();
let store: RelayStore;
let credentials: Credentials;
const node = generateNodeKey();

beforeAll(() => {
  store = new RelayStore(data.dir);
  credentials = new Credentials(store, loadOrCreateSecret(data.dir, 'relay-server.key'));
  store.db.prepare("INSERT INTO nodes (node_id, local, registration, created_ms, updated_ms) VALUES (?, 1, '{}', 0, 0)").run(node.nodeId);
});
afterAll(() => {
  store.close();
  data.remove();
});

async function outcome(header: string): Promise<string> {
  try {
    return (await credentials.authenticate(header)).kind;
  } catch (err) {
    expect(err).toBeInstanceOf(RelayRefusal);
    return `error ${(err as RelayRefusal).code}`;
  }
}

describe('Credentials.authenticate', () => {
  it('never lets an arbitrary header through, and never refuses it but as an invalid credential (a 401)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string(), fc.string().map((s) => `Bearer ${s}`), fc.string().map((s) => `Bot ${s}`), fc.stringMatching(/^Bearer [0-9a-f]{64}\.[0-9a-f]{64}$/)), async (header) => {
        const result = await outcome(header);
        expect(['anonymous', 'error credential_invalid']).toContain(result);
        if (result === 'anonymous') expect(header.trim()).toBe('');
      }),
    );
  });

  it('accepts the issued credential and refuses any one-character change to it', async () => {
    const credential = await credentials.currentCredential(node.nodeId);
    expect(await outcome(`Bearer ${credential}`)).toBe('human');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: credential.length - 1 }), fc.constantFrom(...'0123456789abcdef'), async (at, ch) => {
        fc.pre(credential[at] !== ch && credential[at] !== '.');
        const changed = credential.slice(0, at) + ch + credential.slice(at + 1);
        expect(await outcome(`Bearer ${changed}`)).toBe('error credential_invalid');
      }),
    );
  });

  it('revocation bumps the version: the old credential stops working, the new one works', async () => {
    const before = await credentials.currentCredential(node.nodeId);
    await store.tx(credentials.revokeAll(node.nodeId, 1));
    const after = await credentials.currentCredential(node.nodeId);
    expect(after).not.toBe(before);
    expect(await outcome(`Bearer ${before}`)).toBe('error credential_invalid');
    expect(await outcome(`Bearer ${after}`)).toBe('human');
  });

  it('a Credentials over the same server key issues the same credential', async () => {
    const fresh = new Credentials(store, loadOrCreateSecret(data.dir, 'relay-server.key'));
    expect(await fresh.currentCredential(node.nodeId)).toBe(await credentials.currentCredential(node.nodeId));
  });
});
