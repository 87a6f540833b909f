import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CSRF_TOKEN_TTL_MS, issueCsrfToken } from './csrf-token.js';
import { removeDbDir, startPagesTestApp, TEST_SECRET, TEST_START_MS, type PagesTestApp } from '../../../test/support/pages-test-app.js';

const execFileAsync = promisify(execFile);

let app: PagesTestApp;
const dbDirs: string[] = [];

beforeEach(async () => {
  app = await startPagesTestApp();
  dbDirs.push(app.dbPath);
});

afterEach(async () => {
  await app.close();
  for (const path of dbDirs.splice(0)) removeDbDir(path);
});

/** A token as the page would render it now (on the app's fake clock). */
function freshToken(): string {
  return issueCsrfToken(TEST_SECRET, app.fake.now);
}

async function post(
  body: string | Record<string, string> | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown; res: Response }> {
  const encoded = typeof body === 'object' ? new URLSearchParams(body).toString() : body;
  const res = await fetch(`${app.baseUrl}/api/v1/waitlist`, {
    method: 'POST',
    redirect: 'manual',
    headers: encoded === undefined ? headers : { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: encoded,
  });
  const text = await res.text();
  const isJson = res.headers.get('content-type')?.startsWith('application/json') ?? false;
  return { status: res.status, json: isJson ? JSON.parse(text) : undefined, res };
}

describe('POST /api/v1/waitlist: success', () => {
  it('stores the entry, normalised, and answers {"status":"ok","kind","email"}', async () => {
    const { status, json, res } = await post({ kind: 'team', email: '  Ada.Lovelace@Example.ORG ', note: ' boards: pico ', csrf: freshToken() });
    expect(status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(JSON.stringify(json)).toBe('{"status":"ok","kind":"team","email":"Ada.Lovelace@example.org"}');
    expect(await app.waitlist.count()).toBe(1);
    expect(await app.waitlist.list({ limit: 10 })).toEqual([
      { email: 'Ada.Lovelace@example.org', kind: 'team', note: 'boards: pico', joinedAtMs: TEST_START_MS },
    ]);
  });

  it('defaults kind to "person" and note to ""', async () => {
    const { status, json } = await post({ email: 'p@example.org', csrf: freshToken() });
    expect(status).toBe(200);
    expect(json).toEqual({ status: 'ok', kind: 'person', email: 'p@example.org' });
    expect((await app.waitlist.list({ limit: 1 }))[0]).toMatchObject({ kind: 'person', note: '' });
  });

  it('redirects a browser form post (Accept: text/html) back to /?joined=1 with 303', async () => {
    const { status, res } = await post(
      { kind: 'person', email: 'b@example.org', csrf: freshToken() },
      { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', origin: app.baseUrl, 'sec-fetch-site': 'same-origin' },
    );
    expect(status).toBe(303);
    expect(res.headers.get('location')).toBe('/?joined=1#waitlist');
    expect(await app.waitlist.count()).toBe(1);
  });

  it('accepts the token rendered into the form on / (the whole human flow)', async () => {
    const page = await (await fetch(`${app.baseUrl}/`)).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
    expect(csrf).toBeDefined();
    app.fake.tick(CSRF_TOKEN_TTL_MS - 1000); // the visitor took almost two hours to type
    const { status } = await post({ kind: 'agent', email: 'bot@agents.example', note: 'ci', csrf: csrf ?? '' });
    expect(status).toBe(200);
    expect(await app.waitlist.count()).toBe(1);
  });

  it('answers a duplicate exactly like a new address and keeps the first entry unchanged', async () => {
    const first = await post({ kind: 'person', email: 'dup@example.org', note: 'first', csrf: freshToken() });
    app.fake.tick(60_000);
    const second = await post({ kind: 'team', email: 'dup@EXAMPLE.org', note: 'second', csrf: freshToken() });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.json).toEqual({ status: 'ok', kind: 'team', email: 'dup@example.org' });
    expect(await app.waitlist.count()).toBe(1);
    expect(await app.waitlist.list({ limit: 5 })).toEqual([
      { email: 'dup@example.org', kind: 'person', note: 'first', joinedAtMs: TEST_START_MS },
    ]);
  });

  it('keeps the list across a restart on the same SQLite file', async () => {
    await post({ email: 'one@example.org', csrf: freshToken() });
    await post({ kind: 'agent', email: 'two@example.org', csrf: freshToken() });
    const dbPath = app.dbPath;
    await app.close();
    app = await startPagesTestApp({ dbPath, startMs: TEST_START_MS + 3_600_000 });
    expect(await app.waitlist.count()).toBe(2);
    expect((await app.waitlist.list({ limit: 5 })).map((e) => e.email).sort()).toEqual(['one@example.org', 'two@example.org']);
    const again = await post({ email: 'one@example.org', csrf: freshToken() });
    expect(again.status).toBe(200);
    expect(await app.waitlist.count()).toBe(2);
  });
});

describe('POST /api/v1/waitlist: validation (422, FastAPI bodies, nothing stored)', () => {
  const cases: { name: string; form: Record<string, string>; body: string }[] = [
    {
      name: 'email without anything after the @',
      form: { email: 'x@' },
      body: '{"detail":[{"type":"value_error","loc":["body","email"],"msg":"value is not a valid email address: There must be something after the @-sign.","input":"x@","ctx":{"reason":"There must be something after the @-sign."}}]}',
    },
    {
      name: 'email without an @',
      form: { email: 'nobody.example.org' },
      body: '{"detail":[{"type":"value_error","loc":["body","email"],"msg":"value is not a valid email address: An email address must have an @-sign.","input":"nobody.example.org","ctx":{"reason":"An email address must have an @-sign."}}]}',
    },
    {
      name: 'email with a space',
      form: { email: 'a b@example.org' },
      body: '{"detail":[{"type":"value_error","loc":["body","email"],"msg":"value is not a valid email address: The email address contains a space or a control character.","input":"a b@example.org","ctx":{"reason":"The email address contains a space or a control character."}}]}',
    },
    {
      name: 'email whose domain has no dot',
      form: { email: 'root@localhost' },
      body: '{"detail":[{"type":"value_error","loc":["body","email"],"msg":"value is not a valid email address: The part after the @-sign is not valid. It should have a period.","input":"root@localhost","ctx":{"reason":"The part after the @-sign is not valid. It should have a period."}}]}',
    },
    {
      name: 'unknown kind',
      form: { kind: 'robot', email: 'k@example.org' },
      body: `{"detail":[{"type":"literal_error","loc":["body","kind"],"msg":"Input should be 'person', 'team' or 'agent'","input":"robot","ctx":{"expected":"'person', 'team' or 'agent'"}}]}`,
    },
    {
      name: 'note over 500 characters',
      form: { email: 'n@example.org', note: 'x'.repeat(501) },
      body: `{"detail":[{"type":"string_too_long","loc":["body","note"],"msg":"String should have at most 500 characters","input":"${'x'.repeat(501)}","ctx":{"max_length":500}}]}`,
    },
    {
      name: 'every field wrong at once, reported in field order',
      form: { note: 'y'.repeat(600), email: '@', kind: '' },
      body:
        '{"detail":[' +
        `{"type":"literal_error","loc":["body","kind"],"msg":"Input should be 'person', 'team' or 'agent'","input":"","ctx":{"expected":"'person', 'team' or 'agent'"}},` +
        '{"type":"value_error","loc":["body","email"],"msg":"value is not a valid email address: There must be something before the @-sign.","input":"@","ctx":{"reason":"There must be something before the @-sign."}},' +
        `{"type":"string_too_long","loc":["body","note"],"msg":"String should have at most 500 characters","input":"${'y'.repeat(600)}","ctx":{"max_length":500}}` +
        ']}',
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const { status, json } = await post({ ...c.form, csrf: freshToken() });
      expect(status).toBe(422);
      expect(JSON.stringify(json)).toBe(c.body);
      expect(await app.waitlist.count()).toBe(0);
    });
  }

  it('an empty body means all defaults, which fails on the empty email', async () => {
    const empty = '{"detail":[{"type":"value_error","loc":["body","email"],"msg":"value is not a valid email address: The email address is empty.","input":"","ctx":{"reason":"The email address is empty."}}]}';
    for (const body of [undefined, '']) {
      const { status, json } = await post(body);
      expect(status).toBe(422);
      expect(JSON.stringify(json)).toBe(empty);
    }
    expect(await app.waitlist.count()).toBe(0);
  });

  it('refuses a field sent twice instead of picking one', async () => {
    const { status, json } = await post(`email=a%40example.org&email=b%40example.org&csrf=${freshToken()}`);
    expect(status).toBe(422);
    expect(JSON.stringify(json)).toBe(
      `{"detail":[{"type":"value_error","loc":["body","email"],"msg":"Value error, the field 'email' was sent 2 times; send it once","input":["a@example.org","b@example.org"],"ctx":{"error":"the field 'email' was sent 2 times; send it once"}}]}`,
    );
    expect(await app.waitlist.count()).toBe(0);
  });

  it('ignores fields the spec does not define, as FastAPI does', async () => {
    const { status } = await post({ email: 'extra@example.org', csrf: freshToken(), admin: 'true' });
    expect(status).toBe(200);
  });
});

describe('POST /api/v1/waitlist: CSRF and origin (403, nothing stored)', () => {
  const reload = (base: string) => `reload ${base}/ and submit the waitlist form again`;

  it('refuses a missing token', async () => {
    const { status, json } = await post({ email: 'm@example.org' });
    expect(status).toBe(403);
    expect(json).toEqual({ detail: expect.stringContaining('sent without its CSRF token') });
    expect((json as { detail: string }).detail).toContain(reload(app.baseUrl));
    expect(await app.waitlist.count()).toBe(0);
  });

  it('refuses a forged token (wrong secret, altered time, garbage)', async () => {
    const good = freshToken();
    const [v, issued, nonce] = good.split('.') as [string, string, string, string];
    const forgeries = [
      issueCsrfToken(new Uint8Array(32).fill(7), app.fake.now),
      // Re-dating a real token to extend its life breaks its MAC.
      `${v}.${Number(issued) + 1}.${nonce}.${good.split('.')[3]}`,
      'v1.1.2.3',
      'not-a-token',
    ];
    for (const csrf of forgeries) {
      const { status, json } = await post({ email: 'f@example.org', csrf });
      expect(status, csrf).toBe(403);
      expect((json as { detail: string }).detail).toMatch(/CSRF token .*(not valid|not a token this server issues)/);
      expect((json as { detail: string }).detail).toContain(reload(app.baseUrl));
    }
    expect(await app.waitlist.count()).toBe(0);
  });

  it('refuses an expired token, measured on the injected clock', async () => {
    const csrf = freshToken();
    app.fake.tick(CSRF_TOKEN_TTL_MS + 1);
    const { status, json } = await post({ email: 'late@example.org', csrf });
    expect(status).toBe(403);
    expect(json).toEqual({
      detail: `The CSRF token of the waitlist form has expired (tokens are valid for 120 minutes): ${reload(app.baseUrl)} (agents: take the hidden csrf field from that page's form).`,
    });
    expect(await app.waitlist.count()).toBe(0);
  });

  it('refuses a browser post from another site even with a valid token', async () => {
    const crossSiteHeaders: Record<string, string>[] = [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'https://evil.example' }, { origin: 'null' }];
    for (const headers of crossSiteHeaders) {
      const { status, json } = await post({ email: 'x@example.org', csrf: freshToken() }, headers);
      expect(status).toBe(403);
      expect((json as { detail: string }).detail).toMatch(/^Cross-site waitlist submission refused/);
    }
    expect(await app.waitlist.count()).toBe(0);
  });

  it('checks validation before the token, so a bad email is named even with a bad token', async () => {
    const { status } = await post({ email: 'bad', csrf: 'forged' });
    expect(status).toBe(422);
  });
});

describe('POST /api/v1/waitlist: transport errors', () => {
  it('refuses a JSON body with 415 naming the form type', async () => {
    const res = await fetch(`${app.baseUrl}/api/v1/waitlist`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'j@example.org' }),
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({
      detail: 'The waitlist takes an application/x-www-form-urlencoded form (fields kind, email, note, csrf), got "application/json".',
    });
  });

  it('refuses a charset it cannot read with 415 and invalid UTF-8 with 400', async () => {
    const utf16 = await post('email=j%40example.org', { 'content-type': 'application/x-www-form-urlencoded; charset=utf-16' });
    expect(utf16.status).toBe(415);
    expect(utf16.json).toEqual({ detail: 'The waitlist form must be UTF-8, US-ASCII or ISO-8859-1, got charset "utf-16".' });
    // US-ASCII is a subset of UTF-8: read (and refused later for its missing CSRF token, not its charset).
    const ascii = await post('email=j%40example.org', { 'content-type': 'application/x-www-form-urlencoded; charset=US-ASCII' });
    expect(ascii.status).toBe(403);
    const res = await fetch(`${app.baseUrl}/api/v1/waitlist`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.from([0x65, 0x6d, 0x61, 0x69, 0x6c, 0x3d, 0xff, 0xfe]),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: 'There was an error parsing the body: the form is not valid UTF-8.' });
  });

  it('reads a form declared ISO-8859-1 as Latin-1: a percent escape is one byte, one code point U+0000-U+00FF', async () => {
    const body = `kind=person&email=j%40example.org&note=caf%E9+cr%E8me%A0%FF&csrf=${freshToken()}`;
    const { status, json } = await post(body, { 'content-type': 'application/x-www-form-urlencoded; charset=ISO-8859-1' });
    expect(status).toBe(200);
    expect(json).toEqual({ status: 'ok', kind: 'person', email: 'j@example.org' });
    // Read as UTF-8 (URLSearchParams), each lone escape would have been U+FFFD.
    expect((await app.waitlist.list({ limit: 1 }))[0]).toMatchObject({ note: 'café crème\u00a0ÿ' });
  });

  it('refuses a body over 16 KiB with 413 and stores nothing', async () => {
    const { status, json } = await post({ email: 'big@example.org', csrf: freshToken(), note: 'z'.repeat(20_000) });
    expect(status).toBe(413);
    expect(json).toEqual({ detail: 'The waitlist form body is larger than 16384 bytes.' });
    expect(await app.waitlist.count()).toBe(0);
  });
});

describe('the shell example on / really works', () => {
  const hasCurl = (() => {
    try {
      execFileSync('curl', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

  it.skipIf(!hasCurl)('joins the waitlist when pasted into sh, exactly as the page shows it', async () => {
    const page = await (await fetch(`${app.baseUrl}/`)).text();
    const section = page.slice(page.indexOf('<section id="waitlist">'));
    const script = (/<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(section)?.[1] ?? '')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
    expect(script).toContain('/api/v1/waitlist');
    // Run asynchronously: the server answering curl lives in this process.
    const { stdout } = await execFileAsync('sh', ['-c', script], { timeout: 20_000 });
    expect(JSON.parse(stdout)).toEqual({ status: 'ok', kind: 'agent', email: 'you@example.org' });
    expect(await app.waitlist.list({ limit: 1 })).toEqual([
      { email: 'you@example.org', kind: 'agent', note: 'boards I would test', joinedAtMs: TEST_START_MS },
    ]);
  });
});
