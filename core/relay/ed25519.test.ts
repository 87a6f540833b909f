import { createHash, createPublicKey, verify as cryptoVerify } from 'node:crypto';
import * as noble from '@noble/ed25519';
import { describe, expect, it } from 'vitest';
import {
  ED25519_L,
  checkPublicKey,
  ed25519Verifiers,
  isCanonicalSignature,
  isSmallOrderPublicKey,
  publicKeyFromSecret,
  signEd25519,
  verifyEd25519,
} from './ed25519.js';
import { generateNodeKey, nodeIdProblem, nodeIdToPublicKey, nodeKeyFromSecret } from './node-id.js';

const hex = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));
const P = (1n << 255n) - 19n;
const le = (n: bigint) => {
  const out = new Uint8Array(32);
  for (let k = 0; k < 32; k++, n >>= 8n) out[k] = Number(n & 0xffn);
  return out;
};
const fromLe = (b: Uint8Array) => b.reduceRight((acc, byte) => (acc << 8n) | BigInt(byte), 0n);

/** The 8 small-order points, canonically encoded (the libsodium blocklist's canonical half). */
const SMALL_ORDER = [
  '0100000000000000000000000000000000000000000000000000000000000000', // identity, order 1
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // (0, -1), order 2
  '0000000000000000000000000000000000000000000000000000000000000000', // order 4 (all zero)
  '0000000000000000000000000000000000000000000000000000000000000080', // order 4
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa', // order 8
];

const SPKI = Buffer.from('302a300506032b6570032100', 'hex');
/** OpenSSL with no fence at all: what we would get by calling node:crypto directly. */
const bareOpenSsl = (sig: Uint8Array, msg: Uint8Array, key: Uint8Array) =>
  cryptoVerify(null, msg, createPublicKey({ key: Buffer.concat([SPKI, key]), format: 'der', type: 'spki' }), sig);

const message = new TextEncoder().encode('x.vote/1 edge cases');

describe('public key checks', () => {
  it.each(SMALL_ORDER)('refuses the small-order point %s', (key) => {
    expect(isSmallOrderPublicKey(hex(key))).toBe(true);
    expect(checkPublicKey(hex(key))).toBe('small-order');
    expect(nodeIdProblem(key)).toMatch(/small-order/);
  });

  it('refuses every non-canonical encoding (y >= p, either sign) and x = 0 with the sign bit set', () => {
    for (let y = P; y < 1n << 255n; y++) {
      for (const sign of [0n, 1n << 255n]) {
        const bytes = le(y | sign);
        expect(isSmallOrderPublicKey(bytes)).toBe(true);
        expect(checkPublicKey(bytes)).toBe('non-canonical-encoding');
      }
    }
    expect(checkPublicKey(le(1n | (1n << 255n)))).toBe('non-canonical-encoding');
    expect(checkPublicKey(le(P - 1n + (1n << 255n)))).toBe('non-canonical-encoding');
  });

  it('accepts generated keys and refuses off-curve points and mixed-order points', () => {
    const key = nodeIdToPublicKey(generateNodeKey().nodeId);
    expect(checkPublicKey(key)).toBeNull();
    expect(isSmallOrderPublicKey(key)).toBe(false);
    // y = 2 is not on the curve ((y^2 - 1) / (d y^2 + 1) is not a square).
    expect(checkPublicKey(le(2n))).toBe('not-a-curve-point');
    expect(isSmallOrderPublicKey(le(2n))).toBe(false);
    const mixed = noble.Point.fromBytes(key).add(noble.Point.fromBytes(hex(SMALL_ORDER[4] as string))).toBytes();
    expect(checkPublicKey(mixed)).toBe('mixed-order');
    expect(checkPublicKey(new Uint8Array(31))).toBe('wrong-length');
  });

  it('derives the RFC 8032 test vector 1 public key from its seed', () => {
    const key = nodeKeyFromSecret(hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60'));
    expect(key.nodeId).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    const sig = signEd25519(new Uint8Array(0), key.secretKey);
    expect(Buffer.from(sig).toString('hex')).toBe(
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
    );
  });
});

describe('the two verifiers agree on the edge cases', () => {
  const key = generateNodeKey();
  const publicKey = nodeIdToPublicKey(key.nodeId);
  const sig = signEd25519(message, key.secretKey);

  it('both accept an honest signature', () => {
    expect(ed25519Verifiers.nodeCrypto(sig, message, publicKey)).toBe(true);
    expect(ed25519Verifiers.noble(sig, message, publicKey)).toBe(true);
    expect(verifyEd25519).toBe(ed25519Verifiers.nodeCrypto);
  });

  it('both refuse a non-canonical S (S + L): the signature cannot be re-spelled', () => {
    const s = fromLe(sig.subarray(32)) + ED25519_L;
    const malleable = new Uint8Array([...sig.subarray(0, 32), ...le(s)]);
    expect(isCanonicalSignature(malleable)).toBe(false);
    expect(ed25519Verifiers.nodeCrypto(malleable, message, publicKey)).toBe(false);
    expect(ed25519Verifiers.noble(malleable, message, publicKey)).toBe(false);
  });

  it('a signature is canonical exactly when S < L and the low 255 bits of R are below p, at the edges too', () => {
    const R_VALUES = [0n, 1n, P - 1n, P, P + 1n, (1n << 255n) - 1n, 1n << 255n, (1n << 255n) + P - 1n, (1n << 255n) + P, (1n << 256n) - 1n];
    const S_VALUES = [0n, 1n, ED25519_L - 1n, ED25519_L, ED25519_L + 1n, 1n << 253n, (1n << 256n) - 1n, fromLe(sig.subarray(32))];
    for (const r of R_VALUES) {
      for (const s of S_VALUES) {
        const expected = s < ED25519_L && (r & ((1n << 255n) - 1n)) < P;
        expect(isCanonicalSignature(new Uint8Array([...le(r), ...le(s)])), `R ${r.toString(16)}, S ${s.toString(16)}`).toBe(expected);
      }
    }
    expect(isCanonicalSignature(sig.subarray(0, 63))).toBe(false);
  });

  it('both refuse the universal forgery under a small-order key that bare OpenSSL accepts', () => {
    // R = identity, S = 0 satisfies [S]B = R + [k]A for A = identity, whatever the message.
    const identity = hex(SMALL_ORDER[0] as string);
    const forged = new Uint8Array([...identity, ...new Uint8Array(32)]);
    expect(bareOpenSsl(forged, message, identity)).toBe(true);
    expect(noble.verify(forged, message, identity)).toBe(true); // noble's default, ZIP-215
    expect(ed25519Verifiers.nodeCrypto(forged, message, identity)).toBe(false);
    expect(ed25519Verifiers.noble(forged, message, identity)).toBe(false);
  });

  it('keyChecked skips only the key check: the caller vouches for the key (a relay for its registered nodes), the signature is still checked', () => {
    const identity = hex(SMALL_ORDER[0] as string);
    const forged = new Uint8Array([...identity, ...new Uint8Array(32)]);
    // What the option trusts the caller with: the key check is what refuses this forgery.
    expect(ed25519Verifiers.nodeCrypto(forged, message, identity, { keyChecked: true })).toBe(true);
    expect(ed25519Verifiers.nodeCrypto(forged, message, identity)).toBe(false);
    expect(ed25519Verifiers.nodeCrypto(sig, message, publicKey, { keyChecked: true })).toBe(true);
    expect(ed25519Verifiers.nodeCrypto(sig, new Uint8Array([...message, 1]), publicKey, { keyChecked: true })).toBe(false);
    expect(ed25519Verifiers.noble(sig, message, publicKey, { keyChecked: true })).toBe(true);
  });

  it('both refuse small-order keys in any encoding', () => {
    const forged = new Uint8Array([...hex(SMALL_ORDER[0] as string), ...new Uint8Array(32)]);
    for (const key of [...SMALL_ORDER.map(hex), le(P + 1n)]) {
      expect(ed25519Verifiers.nodeCrypto(forged, message, key)).toBe(false);
      expect(ed25519Verifiers.noble(forged, message, key)).toBe(false);
    }
  });

  it('documents the one known disagreement: a key owner can craft R with a torsion part', () => {
    // Only the holder of the secret scalar can build this. Cofactored noble accepts it, cofactorless
    // OpenSSL refuses; the relay uses one verifier everywhere, so relays never split on it.
    const digest = createHash('sha512').update(key.secretKey).digest();
    const head = new Uint8Array(digest.subarray(0, 32));
    head[0] = (head[0] as number) & 248;
    head[31] = ((head[31] as number) & 127) | 64;
    const a = fromLe(head) % ED25519_L;
    const r = 1234567890123456789n;
    const torsion = noble.Point.fromBytes(hex(SMALL_ORDER[4] as string));
    const rBytes = noble.Point.BASE.multiply(r).add(torsion).toBytes();
    const k = fromLe(new Uint8Array(createHash('sha512').update(rBytes).update(publicKey).update(message).digest())) % ED25519_L;
    const crafted = new Uint8Array([...rBytes, ...le((r + k * a) % ED25519_L)]);
    expect(ed25519Verifiers.noble(crafted, message, publicKey)).toBe(true);
    expect(ed25519Verifiers.nodeCrypto(crafted, message, publicKey)).toBe(false);
  });

  it('both refuse every single-bit flip of signature, message and key', () => {
    for (let bit = 0; bit < 512; bit += 7) {
      const bad = new Uint8Array(sig);
      bad[bit >> 3] = (bad[bit >> 3] as number) ^ (1 << (bit & 7));
      expect(ed25519Verifiers.nodeCrypto(bad, message, publicKey)).toBe(false);
      expect(ed25519Verifiers.noble(bad, message, publicKey)).toBe(false);
    }
    for (let bit = 0; bit < 256; bit += 5) {
      const badKey = new Uint8Array(publicKey);
      badKey[bit >> 3] = (badKey[bit >> 3] as number) ^ (1 << (bit & 7));
      expect(ed25519Verifiers.nodeCrypto(sig, message, badKey)).toBe(false);
      expect(ed25519Verifiers.noble(sig, message, badKey)).toBe(false);
    }
    const badMessage = new Uint8Array(message);
    badMessage[0] = (badMessage[0] as number) ^ 1;
    expect(ed25519Verifiers.nodeCrypto(sig, badMessage, publicKey)).toBe(false);
    expect(ed25519Verifiers.noble(sig, badMessage, publicKey)).toBe(false);
  });
});

describe('signing keys made once per seed', () => {
  it('signs with what the seed array holds now: one overwritten in place signs as its new key', () => {
    const [first, second] = [generateNodeKey(), generateNodeKey()];
    const seed = new Uint8Array(first.secretKey);
    const message = new TextEncoder().encode('kept signer');
    const before = signEd25519(message, seed);
    expect(signEd25519(message, seed)).toEqual(before);
    expect(verifyEd25519(before, message, nodeIdToPublicKey(first.nodeId))).toBe(true);
    seed.set(second.secretKey);
    const after = signEd25519(message, seed);
    expect(verifyEd25519(after, message, nodeIdToPublicKey(second.nodeId))).toBe(true);
    expect(verifyEd25519(after, message, nodeIdToPublicKey(first.nodeId))).toBe(false);
    expect(publicKeyFromSecret(seed)).toEqual(nodeIdToPublicKey(second.nodeId));
  });

  it('hands out a copy of the public key, and still refuses a seed that is not 32 bytes', () => {
    const key = generateNodeKey();
    const handedOut = publicKeyFromSecret(key.secretKey);
    handedOut.fill(0);
    expect(publicKeyFromSecret(key.secretKey)).toEqual(nodeIdToPublicKey(key.nodeId));
    expect(() => signEd25519(new Uint8Array(1), new Uint8Array(31))).toThrow(/32-byte seed, got 31 bytes/);
  });
});
