import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import type { QuorumSet } from '../../core/relay/quorum-set.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { signVote } from '../../core/relay/vote.js';
import { call, relayForTests } from '../support/relay-test-kit.js';

/**
 * Issue 18, "an outside client can be written from the documents": the derived identifiers of
 * docs/relay-api.md ("Derived identifiers and signed documents") computed as an outside client would,
 * from the text alone with node:crypto (no core helper), agree with what a live relay answers.
 * The quorum set is chosen so that every normalisation step of `slice_hash` matters.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const { relay, alice } = relayForTests({ clock, nodes: ['alice'], dataDirPrefix: 'relay-derived-' });

const sha256Hex = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** RFC 8785 for what a quorum set holds (objects, arrays, strings, small integers): keys sorted by UTF-16 code units. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The normal form as the document words it: innermost first, one-entry inner sets lifted, v sorted, i sorted by canonical JSON, t kept. */
function normalForm(q: QuorumSet): QuorumSet {
  const v = [...q.v];
  const i: QuorumSet[] = [];
  for (const inner of q.i.map(normalForm)) {
    if (inner.v.length + inner.i.length !== 1) i.push(inner);
    else if (inner.v.length === 1) v.push(inner.v[0]!);
    else i.push(inner.i[0]!);
  }
  v.sort();
  i.sort((a, b) => (canonical(a) < canonical(b) ? -1 : canonical(a) > canonical(b) ? 1 : 0));
  return { t: q.t, v, i };
}

const sliceHashFromDocs = (q: QuorumSet) => sha256Hex(Buffer.from(canonical(normalForm(q)), 'utf8'));

describe('derived identifiers computed from docs/relay-api.md alone match the relay', () => {
  it('slice_hash: the relay answers it for POST /slice and GET /nodes/{id}, and resolves it in a vote', async () => {
    const [a, b, c, d, e, f, g] = Array.from({ length: 7 }, () => generateNodeKey().nodeId).sort() as [string, string, string, string, string, string, string];
    // Unsorted v; a one-validator inner set (lifted into v); a one-set inner set (lifted into i);
    // inner sets given out of their canonical order.
    const slice: QuorumSet = { t: 2, v: [c, a], i: [{ t: 2, v: [g, f], i: [] }, { t: 1, v: [b], i: [] }, { t: 1, v: [], i: [{ t: 2, v: [e, d], i: [] }] }] };
    const expected = sliceHashFromDocs(slice);
    expect(normalForm(slice)).toEqual({ t: 2, v: [a, b, c], i: [{ t: 2, v: [d, e], i: [] }, { t: 2, v: [f, g], i: [] }] });

    const published = await call(relay.baseUrl, 'POST', '/slice', { body: slice, auth: alice.auth });
    expect(published.status, published.text).toBe(200);
    expect(published.body.slice_hash).toBe(expected);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${alice.nodeId}`)).body.slice).toEqual({ hash: expected, quorum_set: normalForm(slice) });

    // A vote naming its slice by the hash computed here: the relay resolves it to the published set.
    const claim = { kind: 'statement', title: 'ids from the documents', body: 'computed by hand' };
    const item = (await call(relay.baseUrl, 'POST', '/items', { body: claim, auth: alice.auth })).body.id as string;
    const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: alice.nodeId, value: 'yes', phase: 'vote', slice_hash: expected, created_at: Math.floor(clock.nowMs() / 1000) }, alice.secretKey);
    const voted = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: vote });
    expect(voted.status, voted.text).toBe(201);
    expect((await call(relay.baseUrl, 'GET', `/items/${item}/bulletin/${alice.nodeId}`)).body.slice_hash).toBe(expected);
  });

  it('claim id and file id: the relay answers the ids computed from the document', async () => {
    const claim = { kind: 'question', title: 'does the ünö reset in 2 s? 😀', body: 'line one\nline two' };
    const claimAnswer = await call(relay.baseUrl, 'POST', '/items', { body: claim, auth: alice.auth });
    expect(claimAnswer.body.id).toBe(sha256Hex(Buffer.from(`x.claim/1\n${claim.kind}\n${claim.title}\n${claim.body}`, 'utf8')));

    const bytes = new TextEncoder().encode('firmware bytes \u0000\u00ff');
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'fw.bin');
    const fileAnswer = await call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
    expect(fileAnswer.body.id).toBe(sha256Hex(bytes));
  });
});
