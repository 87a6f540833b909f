import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { quickStartCurl } from '../../server/bench/pages/home-page.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer, picoElf, submit } from './bench-job-requests.js';

/**
 * The first minutes on a fresh bench (issue 31): the README's quick start is the home page's, on
 * its first screen; the example firmware is served; the plugin manifest publishes no placeholder
 * contact; the operator can turn the waitlist off; counts read as English.
 */
const root = path.resolve(import.meta.dirname, '../..');
let app: BenchTestApp;
afterEach(() => app?.close());

describe('the quick start', () => {
  it('is the README\u2019s "Try it", word for word, and comes on the home page before the boards', async () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const tryIt = readme.slice(readme.indexOf('## Try it'));
    const block = /```sh\n([\s\S]*?)\n```/.exec(tryIt)![1];
    expect(block).toBe(quickStartCurl('http://127.0.0.1:8080', 'pico'));
    expect(readme.match(/localhost:8080/g)).toBeNull();

    app = await startBenchTestApp();
    const home = await (await app.request('/')).text();
    const quick = home.indexOf('<section id="quick-start">');
    expect(quick).toBeGreaterThan(-1);
    expect(quick).toBeLessThan(home.indexOf('<section id="boards">'));
    expect(home).toContain('curl -s -o hello.elf &quot;$BASE/examples/pico/hello.elf&quot;');
  });

  it('serves each board\u2019s example firmware at /examples/{board}/hello.elf, and 404 for others', async () => {
    app = await startBenchTestApp();
    const res = await app.request('/examples/pico/hello.elf');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(readFileSync(path.join(root, 'firmware/examples/pico/hello.elf'))));
    expect((await app.request('/examples/uno/hello.elf')).status).toBe(200);
    const missing = await app.request('/examples/nope/hello.elf');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'no example firmware for board "nope" here: GET /api/v1/boards lists the boards' });
    expect((await app.request('/examples/..%2Fpico/hello.elf')).status).toBe(404);
  });

  it('says "1 job" and "1 session", not "1 jobs"', async () => {
    app = await startBenchTestApp();
    const alice = await app.register('alice');
    await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'uno' }) });
    await submit(app, alice.token, { board: 'pico' }, picoElf());
    await app.idle();
    const home = await (await app.request('/')).text();
    expect(home).toMatch(/1 session open,\s+1 job run so far\./);
  });
});

describe('what the operator publishes', () => {
  it('leaves the contact out of ai-plugin.json when none is set, and publishes the one set', async () => {
    app = await startBenchTestApp();
    const bare = (await (await app.request('/.well-known/ai-plugin.json')).json()) as Record<string, unknown>;
    expect(bare).not.toHaveProperty('contact_email');
    await app.close();
    app = await startBenchTestApp({ pages: { contactEmail: 'lab@example.net' } });
    expect(((await (await app.request('/.well-known/ai-plugin.json')).json()) as Record<string, unknown>).contact_email).toBe('lab@example.net');
  });

  it('explains the waitlist as the operator\u2019s own, and turns it off with waitlist: false (--no-waitlist)', async () => {
    app = await startBenchTestApp();
    expect(await (await app.request('/')).text()).toContain('This list belongs to the operator of this bench');
    await app.close();
    app = await startBenchTestApp({ pages: { waitlist: false } });
    const home = await (await app.request('/')).text();
    expect(home).not.toContain('id="waitlist"');
    expect(await (await app.request('/llms.txt')).text()).not.toContain('Waitlist');
    const join = await app.request('/api/v1/waitlist', { method: 'POST', body: new URLSearchParams({ email: 'a@example.org' }) });
    expect(join.status).toBe(403);
    expect(await join.json()).toEqual({ detail: 'the operator of this bench turned the waitlist off' });
  });

  it('links the waitlist from the shared nav of home, stats and console only while it is open', async () => {
    const waitlistLink = '<a href="/#waitlist">Waitlist</a>';
    const pages = ['/', '/stats', '/console/sign-in'];
    app = await startBenchTestApp();
    for (const page of pages) expect(await (await app.request(page)).text(), page).toContain(waitlistLink);
    await app.close();
    app = await startBenchTestApp({ pages: { waitlist: false } });
    for (const page of pages) {
      const text = await (await app.request(page)).text();
      expect(text, page).toContain('<a href="/stats"');
      expect(text, page).not.toContain('#waitlist');
    }
    // Nor a waitlist total on /stats that can only ever read 0.
    expect(await (await app.request('/stats')).text()).not.toContain('<dt>Waitlist</dt>');
  });
});
