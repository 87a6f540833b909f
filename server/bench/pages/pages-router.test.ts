import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { board, removeDbDir, sampleSnapshot, startPagesTestApp, TEST_START_MS, type PagesTestApp } from '../../../test/support/pages-test-app.js';
import { LIVE_HOME_SCRIPT } from './live-scripts.js';
import { createPagesRouter } from './pages-router.js';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { createClock } from '@sinonjs/fake-timers';
import Database from 'better-sqlite3';
import { migrateBenchDatabase } from '../../storage/bench/bench-store-migrations.js';
import { SqlWaitlist } from '../../storage/bench/sql-side-stores.js';
import { SqliteExecutor } from '../../storage/bench/sql/sqlite-executor.js';

let app: PagesTestApp;

beforeEach(async () => {
  app = await startPagesTestApp();
});

afterEach(async () => {
  await app.close();
  removeDbDir(app.dbPath);
});

async function get(path: string, init?: RequestInit): Promise<{ res: Response; text: string }> {
  const res = await fetch(`${app.baseUrl}${path}`, init);
  return { res, text: await res.text() };
}

/** Text of the document with tags removed and whitespace collapsed, for "the page says ..." checks. */
function visibleText(page: string): string {
  return page
    .replace(/<style[\s\S]*?<\/style>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/\s+/g, ' ');
}

function expectPageSecurityHeaders(res: Response): void {
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toMatch(/style-src 'nonce-[A-Za-z0-9+/=]+'/);
  // Scripts: only ours, under the same nonce as the style sheet; requests only back to this origin.
  expect(/script-src 'nonce-([^']+)'/.exec(csp)?.[1]).toBe(/style-src 'nonce-([^']+)'/.exec(csp)?.[1]);
  expect(csp).toContain("connect-src 'self'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).toContain("form-action 'self'");
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
}

describe('GET /', () => {
  it('renders every board with its live status, queue, recent activity and totals', async () => {
    const { res, text } = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const page = visibleText(text);
    expect(text.startsWith('<!doctype html>')).toBe(true);
    expect(page).toContain('Raspberry Pi Pico');
    expect(page).toMatch(/Raspberry Pi Pico pico RP2040 with 2 MiB flash RP2040 arm mock free 0/);
    // Leased: by whom, until when (ISO and UTC text) and how long from the injected clock's now.
    expect(page).toMatch(/NUCLEO-F401RE nucleo-f401re STM32F401RE arm qemu leased by ci-agent-7 until 2026-11-20 12:01:15 UTC \(in 1 min 15 s\) 2/);
    expect(text).toContain('<time datetime="2026-11-20T12:01:15.000Z">');
    expect(page).toMatch(/Arduino Uno uno ATmega328P avr sim busy running a job 1/);
    expect(page).toMatch(/STM32 on probe stm32-probe STM32F103C8 arm probe offline : openocd not found on PATH 0/);
    expect(page).toMatch(/2026-11-20 11:59:55 UTC job-3c1f uno fuzzer running/);
    expect(page).toMatch(/2026-11-20 11:59:00 UTC job-9a2b pico ci-agent-7 done/);
    expect(page).toContain('1 of 4 boards free right now, 3 sessions open, 345 jobs run so far.');
    expect(page).toContain('hilbench 0.1.0, bench service interface 0.3.4');
    expectPageSecurityHeaders(res);
  });

  it('uses the one style element and the one live-update script with the nonce of its own response', async () => {
    const first = await get('/');
    const second = await get('/');
    const nonceOf = (r: Response) => /'nonce-([^']+)'/.exec(r.headers.get('content-security-policy') ?? '')?.[1];
    const nonce = nonceOf(first.res);
    expect(nonce).toBeDefined();
    expect(nonceOf(second.res)).not.toBe(nonce);
    expect(first.text).toContain(`<style nonce="${nonce}">`);
    expect(first.text.match(/<style/g)).toHaveLength(1);
    expect(first.text.match(/<script/g)).toHaveLength(1);
    expect(first.text).toContain(`<script nonce="${nonce}">${LIVE_HOME_SCRIPT.value}</script>`);
    expect(first.text).not.toMatch(/\sstyle=|\son[a-z]+=/i);
    expect(first.text).not.toMatch(/(src|href)="(https?:)?\/\//); // no external assets
  });

  it('shows copy-pasteable curl examples of the whole flow against the public base URL and a free board', async () => {
    const { text } = await get('/');
    const page = visibleText(text);
    expect(page).toContain(`BASE=${app.baseUrl}`);
    const steps = [
      'curl -sS -X POST "$BASE/api/v1/agents/register" -d label=my-agent',
      'curl -sS -X POST "$BASE/api/v1/sessions" -H "authorization: Bearer $TOKEN"',
      '-d board=pico -d idle_seconds=90',
      'curl -sS -X POST "$BASE/api/v1/jobs/flash" -H "authorization: Bearer $TOKEN"',
      '-F board=pico -F session="$SID" -F uart_seconds=0.8 -F firmware=@firmware.elf',
      'curl -sS "$BASE/api/v1/jobs/$JOB?wait=60" -H "authorization: Bearer $TOKEN"',
      'curl -sS -X POST "$BASE/api/v1/sessions/$SID/heartbeat" -H "authorization: Bearer $TOKEN"',
      'curl -sS -X POST "$BASE/api/v1/sessions/$SID/end" -H "authorization: Bearer $TOKEN"',
    ];
    let from = 0;
    for (const step of steps) {
      const at = page.indexOf(step, from);
      expect(at, `step in order: ${step}`).toBeGreaterThanOrEqual(from);
      from = at;
    }
    for (const link of ['/openapi.json', '/llms.txt', '/stats', '/.well-known/ai-plugin.json']) {
      expect(text).toContain(`href="${link}"`);
    }
  });

  it('renders the waitlist form with a fresh CSRF token and the kinds it accepts', async () => {
    const { text } = await get('/');
    expect(text).toContain('<form method="post" action="/api/v1/waitlist">');
    expect(text).toMatch(/<input type="hidden" name="csrf" value="v1\.\d+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}">/);
    expect(text).toContain(`name="csrf" value="v1.${TEST_START_MS}.`);
    for (const kind of ['person', 'team', 'agent']) expect(text).toContain(`<option value="${kind}">`);
    expect(text).not.toContain('role="status"');
    const joined = await get('/?joined=1');
    expect(joined.text).toContain('<p class="notice" role="status">Thank you: your address is on the waitlist.');
  });

  it('escapes everything that came from users or data', async () => {
    const evil = '<script>alert("x")</script>';
    app.setSnapshot(async () => {
      const s = sampleSnapshot(TEST_START_MS);
      s.version = `9${evil}`;
      s.boards = [
        board({ id: `b${evil}`, name: `Name ${evil}`, description: `Desc ${evil}`, mcu: `M${evil}`, architecture: `A${evil}`, backend: `K${evil}` }),
        board({ id: 'l', status: 'leased', leasedBy: `agent ${evil}`, leaseExpiresAt: `soon ${evil}` }),
        board({ id: 'o', status: 'offline', offlineReason: `reason ${evil} & "quotes" 'too'` }),
      ];
      s.recentActivity = [{ jobId: `j${evil}`, board: `b${evil}`, agentLabel: `label ${evil}`, state: `s${evil}`, at: `t${evil}` }];
      s.totals.jobsByState = { [`state${evil}`]: 1 };
      return s;
    });
    for (const path of ['/', '/stats']) {
      const { res, text } = await get(path);
      expect(res.status).toBe(200);
      // The only script element is our own live-update script; every `<script>` of the data is escaped.
      expect(text.replace(/<script nonce="[^"]+">[^<]*<\/script>/, '')).not.toContain('<script');
      expect(text).not.toContain('"x")');
      expect(text).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
      expect(text).toContain('Name &lt;script&gt;');
      expect(text).toContain('label &lt;script&gt;');
      if (path === '/') expect(text).toContain('reason &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;too&#39;');
      if (path === '/stats') expect(text).toContain('state&lt;script&gt;');
      // The hostile board id also reaches an attribute and the shell example: still inert there.
      expect(text).toContain('id="board-b&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"');
    }
    const home = await get('/');
    expect(visibleText(home.text)).toContain(`-d board='b${evil}'`);
  });

  it('says so when there are no boards and no jobs', async () => {
    app.setSnapshot(async () => ({ ...sampleSnapshot(), boards: [], recentActivity: [] }));
    const page = visibleText((await get('/')).text);
    expect(page).toContain('No boards are configured on this bench.');
    expect(page).toContain('No jobs have run yet.');
    expect(page).toContain('-d board=BOARD_ID');
  });

  it('answers 500 {"detail"} and logs the cause when the snapshot fails, without leaking it', async () => {
    app.setSnapshot(async () => {
      throw new Error('database is locked: secret path /var/lib/x');
    });
    const { res, text } = await get('/');
    expect(res.status).toBe(500);
    expect(JSON.parse(text)).toEqual({ detail: 'Internal Server Error' });
    expect(text).not.toContain('secret');
    expect(app.logged).toHaveLength(1);
    expect(app.logged[0]?.message).toBe('pages: GET / failed');
    expect(String(app.logged[0]?.cause)).toContain('database is locked');
  });
});

describe('HEAD', () => {
  it('answers HEAD on the pages with the GET headers and no body', async () => {
    for (const path of ['/', '/stats', '/llms.txt']) {
      const { res, text } = await get(path, { method: 'HEAD' });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(text).toBe('');
    }
  });
});

describe('GET /stats', () => {
  it('answers 500 {"detail"} and logs when the snapshot fails', async () => {
    app.setSnapshot(() => Promise.reject(new Error('store closed')));
    const { res, text } = await get('/stats');
    expect(res.status).toBe(500);
    expect(JSON.parse(text)).toEqual({ detail: 'Internal Server Error' });
    expect(app.logged.map((l) => l.message)).toEqual(['pages: GET /stats failed']);
  });

  it('renders totals, jobs by state in lifecycle order, boards by status and recent activity', async () => {
    const { res, text } = await get('/stats');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectPageSecurityHeaders(res);
    const page = visibleText(text);
    expect(page).toContain('Registered agents 12');
    expect(page).toContain('Open sessions 3');
    expect(page).toContain('Jobs, all time 345');
    expect(page).toContain('Boards 4');
    expect(page).toContain('Waitlist 17');
    expect(page).toMatch(/State Jobs queued 3 running 2 done 300 failed 40 /);
    expect(page).toMatch(/1 free ?, 1 leased ?, 1 busy ?, 1 offline ?\./);
    expect(page).toContain('leased by ci-agent-7 until 2026-11-20 12:01:15 UTC');
    expect(page).toContain('offline : openocd not found on PATH');
    expect(page).toMatch(/job-3c1f uno fuzzer running/);
    expect(text).toContain('<a href="/stats" aria-current="page">');
  });

  it('follows the injected clock for "leased until … (in …)"', async () => {
    const snap = sampleSnapshot(TEST_START_MS);
    app.setSnapshot(async () => snap);
    app.fake.tick(60_000);
    expect(visibleText((await get('/stats')).text)).toContain('(in 15 s)');
    app.fake.tick(20_000);
    expect(visibleText((await get('/stats')).text)).toContain('(now)');
  });
});

describe('discovery documents', () => {
  it('/llms.txt follows llmstxt.org and links the API, the OpenAPI document and the auth flow', async () => {
    const { res, text } = await get('/llms.txt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const lines = text.split('\n');
    expect(lines[0]).toBe('# hilbench');
    expect(lines[1]).toBe('');
    expect(lines[2]).toMatch(/^> hilbench is a hardware-in-the-loop bench/);
    // H2 sections hold link lists "- [name](url): notes", and there is no other H1.
    expect(text.match(/^# /gm)).toHaveLength(1);
    const h2 = text.match(/^## .+$/gm);
    expect(h2).toEqual(['## API', '## Optional']);
    const apiSection = text.slice(text.indexOf('## API'), text.indexOf('## Optional'));
    const links = [...apiSection.matchAll(/^- \[[^\]]+\]\(([^)]+)\)(: .+)?$/gm)].map((m) => m[1]);
    expect(links).toContain(`${app.baseUrl}/openapi.json`);
    for (const path of ['/api/v1/boards', '/api/v1/agents/register', '/api/v1/sessions', '/api/v1/jobs/flash', '/api/v1/jobs/{job_id}', '/api/v1/health', '/api/v1/stats']) {
      expect(links).toContain(`${app.baseUrl}${path}`);
    }
    expect(apiSection.split('\n').filter((l) => l.startsWith('- ')).length).toBe(links.length);
    expect(text).toContain('authorization: Bearer <token>');
    // The shortest flow first (issue 31): register, flash without a session, read the job once it ended.
    const base = app.baseUrl.replace(/[.]/g, '\\.');
    expect(text).toMatch(new RegExp(`^Shortest flow: three requests, no session needed\\.\\n\\n1\\. \`POST ${base}/api/v1/agents/register\`.*returns \`token\``, 'm'));
    expect(text).toMatch(new RegExp(`^2\\. \`POST ${base}/api/v1/jobs/flash\`.*\`session\` is optional`, 'm'));
    expect(text).toMatch(new RegExp(`^3\\. \`GET ${base}/api/v1/jobs/\\{job_id\\}\\?wait=60&uart=text\` answers once`, 'm'));
    expect(text).toContain(`${app.baseUrl}/examples/pico/hello.elf`);
    // The extensions an agent would otherwise discover only in /openapi.json: its live UART, and waiting in a board's queue.
    expect(text).toContain('`GET /api/v1/jobs/{job_id}/uart` streams its UART live');
    expect(text).toMatch(/2\. .*`wait_seconds`/);
  });

  it('/robots.txt allows the pages, disallows /admin and /api/ and points at llms.txt', async () => {
    const { res, text } = await get('/robots.txt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const records = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(records).toEqual(['User-agent: *', 'Allow: /', 'Disallow: /api/', 'Disallow: /admin']);
    expect(text).toContain(`${app.baseUrl}/llms.txt`);
  });

  it('/.well-known/ai-plugin.json is a valid v1 manifest pointing at /openapi.json with bearer auth', async () => {
    const { res, text } = await get('/.well-known/ai-plugin.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const manifest: unknown = JSON.parse(text);
    expect(manifest).toEqual({
      schema_version: 'v1',
      name_for_human: 'hilbench',
      name_for_model: 'hilbench',
      description_for_human: expect.any(String),
      description_for_model: expect.any(String),
      auth: { type: 'user_http', authorization_type: 'bearer' },
      api: { type: 'openapi', url: `${app.baseUrl}/openapi.json` },
      logo_url: `${app.baseUrl}/logo.png`,
      contact_email: 'bench@hilbench.test',
      legal_info_url: `${app.baseUrl}/#legal`,
    });
    const m = manifest as { name_for_model: string; description_for_human: string; description_for_model: string };
    // Limits of the manifest format: model name [A-Za-z0-9_] up to 50, human description up to 100, model's up to 8000.
    expect(m.name_for_model).toMatch(/^[A-Za-z0-9_]{1,50}$/);
    expect(m.description_for_human.length).toBeLessThanOrEqual(100);
    expect(m.description_for_model.length).toBeLessThanOrEqual(8000);
    expect(m.description_for_model).toContain('/api/v1/jobs/flash');
    // The wait that answers once the job ended, so an agent does not poll in a loop.
    expect(m.description_for_model).toContain('GET /api/v1/jobs/{job_id}?wait=60');
    // The links it gives resolve on this router.
    expect((await get('/logo.png')).res.status).toBe(200);
    expect((await get('/')).text).toContain('<section id="legal">');
  });

  it('/logo.png is a PNG', async () => {
    const res = await fetch(`${app.baseUrl}/logo.png`);
    expect(res.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(bytes.readUInt32BE(16)).toBe(128); // IHDR width
    expect(bytes.readUInt32BE(20)).toBe(128); // IHDR height
  });
});

describe('mounting', () => {
  it('leaves paths it does not own to the next handler, even on error', async () => {
    const { res } = await get('/api/v1/boards');
    expect(res.status).toBe(404); // express's own final handler: not answered by the pages router
    // (express's final handler sets its own CSP and nosniff; ours would carry a style nonce and a Referrer-Policy)
    expect(res.headers.get('content-security-policy') ?? '').not.toContain('nonce');
    expect(res.headers.get('referrer-policy')).toBeNull();
  });

  it('refuses a public base URL that is not an absolute http(s) URL, and a short CSRF secret', () => {
    const db = new Database(':memory:');
    migrateBenchDatabase(db);
    const deps = {
      clock: clockFromFakeTimers(createClock(TEST_START_MS)),
      snapshot: async () => sampleSnapshot(),
      waitlist: new SqlWaitlist(new SqliteExecutor(db)),
      csrfSecret: new Uint8Array(32),
    };
    expect(() => createPagesRouter({ ...deps, publicBaseUrl: 'localhost:8080' })).toThrow(/http\(s\) URL/);
    expect(() => createPagesRouter({ ...deps, publicBaseUrl: '/relative' })).toThrow(/absolute http\(s\) URL/);
    expect(() => createPagesRouter({ ...deps, publicBaseUrl: 'javascript:alert(1)' })).toThrow(/http\(s\) URL/);
    expect(() => createPagesRouter({ ...deps, publicBaseUrl: 'http://h/?q=1' })).toThrow(/without query/);
    expect(() => createPagesRouter({ ...deps, publicBaseUrl: 'http://h', csrfSecret: new Uint8Array(8) })).toThrow(/at least 16 bytes/);
    expect(() => createPagesRouter({ ...deps, publicBaseUrl: 'https://bench.example.org/hil/' })).not.toThrow();
    db.close();
  });
});
