import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { expectContinue as expectContinueTo } from '../support/expect-continue-request.js';
import { relayLimits } from '../../wire/relay/relay-facts.js';
import { relayForTests } from '../support/relay-test-kit.js';

/**
 * With `Expect: 100-continue`, a request the relay refuses from its headers (a bad credential, a
 * declared size over the limit) is refused before `100 Continue`, so the client never sends the
 * body; the relay used to say 100 to everything, and an upload of 16 MiB travelled only to be
 * refused. A welcome one gets 100, sends its body and is served. The API is under a base path, as
 * `basePath` allows.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const { relay, alice } = relayForTests({ clock, nodes: ['alice'], relay: { basePath: '/api' } });

/** A POST to the relay with `Expect: 100-continue` declaring `declaredBytes`: `body` is sent only if the relay says 100. */
function expectContinue(path: string, headers: Record<string, string>, body: Buffer, declaredBytes = body.length) {
  return expectContinueTo(new URL(`${relay.baseUrl}${path}`), headers, body, declaredBytes);
}

const upload = (content: string) => {
  const boundary = 'relay-continue';
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`),
  };
};

describe('Expect: 100-continue on the relay', () => {
  it('refuses an upload without a credential with 401 before writing 100', async () => {
    const { headers, body } = upload('no credential');
    const out = await expectContinue('/items', headers, body);
    expect(out).toMatchObject({ continued: false, status: 401, headers: { connection: 'close' } });
    expect(JSON.parse(out.body)).toEqual({ detail: expect.stringContaining('credential') });
  });

  it('refuses an upload declaring more than the file limit with 413 before writing 100', async () => {
    const { headers, body } = upload('declared too large');
    const out = await expectContinue('/items', { ...headers, authorization: alice.auth }, body, relayLimits.fileMaxBytes * 2);
    expect(out).toMatchObject({ continued: false, status: 413, headers: { connection: 'close' } });
    expect(JSON.parse(out.body)).toEqual({ detail: `file larger than ${relayLimits.fileMaxBytes} bytes (the limit); nothing was stored` });
  });

  it('refuses a JSON body declaring more than the JSON limit with 413 before writing 100', async () => {
    const out = await expectContinue('/register', { 'content-type': 'application/json' }, Buffer.from('{}'), relayLimits.jsonBodyMaxBytes + 1);
    expect(out).toMatchObject({ continued: false, status: 413 });
    expect(JSON.parse(out.body)).toEqual({ detail: 'request body too large' });
  });

  it('refuses a body that is not JSON with the 415 it gets without Expect, whatever its declared size (it was a 413)', async () => {
    const out = await expectContinue('/register', { 'content-type': 'text/plain' }, Buffer.from('hi'), relayLimits.jsonBodyMaxBytes + 1);
    expect(out).toMatchObject({ continued: false, status: 415 });
    expect(JSON.parse(out.body)).toEqual({ detail: 'Unsupported media type: the body must be JSON (content-type: application/json), not text/plain' });
  });

  it('answers an upload to the trailing-slash variant with its 307 before writing 100 (it was sent whole, then again)', async () => {
    const { headers, body } = upload('to the slash variant');
    const out = await expectContinue('/items/', { ...headers, authorization: alice.auth }, body);
    expect(out).toMatchObject({ continued: false, status: 307, headers: { location: '/api/items', connection: 'close' } });
  });

  it('asks for and serves a welcome upload', async () => {
    const { headers, body } = upload('a welcome upload');
    const out = await expectContinue('/items', { ...headers, authorization: alice.auth }, body);
    expect(out).toMatchObject({ continued: true, status: 201 });
    expect(JSON.parse(out.body)).toMatchObject({ type: 'file', title: 'a.txt', bytes: 'a welcome upload'.length });
  });
});
