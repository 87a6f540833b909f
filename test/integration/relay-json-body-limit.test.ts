import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { claimId } from '../../core/relay/claim.js';
import { relayLimits } from '../../wire/relay/relay-facts.js';
import { call, relayForTests } from '../support/relay-test-kit.js';

/** A valid claim at the limits fits the JSON body limit even with every character JSON-escaped (it was once refused with 413). */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const { relay, alice } = relayForTests({ clock, nodes: ['alice'] });

/** JSON text of a string with every UTF-16 unit escaped as \uXXXX (what some encoders send). */
function fullyEscaped(s: string): string {
  let out = '"';
  for (let k = 0; k < s.length; k++) out += `\\u${s.charCodeAt(k).toString(16).padStart(4, '0')}`;
  return `${out}"`;
}

describe('JSON body limit', () => {
  it('a maximal claim of astral characters, every one escaped as a surrogate pair, is accepted (201)', async () => {
    const title = '😀'.repeat(relayLimits.titleMaxChars);
    const body = '😁'.repeat(relayLimits.bodyMaxChars);
    const raw = `{ "kind": ${fullyEscaped('statement')}, "title": ${fullyEscaped(title)}, "body": ${fullyEscaped(body)} }`;
    expect(Buffer.byteLength(raw)).toBeGreaterThan(12 * (relayLimits.titleMaxChars + relayLimits.bodyMaxChars));
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: raw, auth: alice.auth, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(201);
    expect(r.body.id).toBe(claimId({ kind: 'statement', title, body }));
  });

  it('a body beyond the limit is still refused with 413', async () => {
    const raw = `{ "kind": "statement", "title": "t", "body": "${' '.repeat(relayLimits.jsonBodyMaxBytes)}" }`;
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: raw, auth: alice.auth, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(413);
  });
});
