import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BenchClient } from '../../clients/bench/bench-client.js';
import type { RunningBenchServer } from '../../server/bench/start-bench-server.js';
import { startSystemClockBench } from '../support/system-clock-bench.js';

/**
 * The pages in a real headless browser (Debian's chromium through playwright-core): a job started
 * through the API shows its UART on the console's job page while it runs, and the home page
 * follows the boards without a reload. Waits are bounded and driven by what the page shows.
 */

// What the functions passed to waitForFunction see in the page (this project compiles without the DOM library).
declare const document: { querySelector(selector: string): { textContent: string | null } | null };

const ADMIN = 'browser-test-admin-token';
const root = path.resolve(import.meta.dirname, '../..');
let server: RunningBenchServer;
let browser: Browser;
let api: BenchClient;

beforeAll(async () => {
  server = await startSystemClockBench({ adminToken: ADMIN });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-background-networking'] });
  const anonymous = new BenchClient({ baseUrl: server.url });
  api = anonymous.withToken((await anonymous.register('browser-agent')).token);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the pages in a browser', () => {
  it("a running job's UART streams onto its console page, and the page shows the outcome when it ends", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/console`);
      expect(new URL(page.url()).pathname).toBe('/console/sign-in');
      await page.fill('#token', ADMIN);
      await Promise.all([page.waitForURL(`${server.url}/console`), page.click('button[type=submit]')]);

      // QEMU runs on host time: a 15 s capture keeps the job running while the page is watched, even on a loaded machine.
      const elf = new Uint8Array(readFileSync(path.join(root, 'firmware/examples/netduinoplus2/hello.elf')));
      const job = await api.submitFlash('netduinoplus2', elf, { uartSeconds: 15 });
      await page.goto(`${server.url}/console/jobs/${job.job_id}`);
      await page.waitForFunction(() => document.querySelector('#uart')?.textContent?.includes('tick 3'), undefined, { timeout: 30_000 });
      // Seen on the page, and the job has not finished: the UART came while it ran.
      expect((await api.getJob(job.job_id)).state).toBe('running');
      expect(await page.textContent('#uart')).toContain('hilbench hello board=netduinoplus2');
      await page.waitForFunction(() => document.querySelector('#job-state')?.textContent === 'done', undefined, { timeout: 60_000 });
      expect(await page.textContent('#uart')).toContain('tick 3');
    } finally {
      await page.close();
    }
  }, 120_000);

  it('the home page follows the boards without a reload', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/`);
      expect(await page.textContent('#board-uno')).toContain('free');
      const session = await api.openSession('uno', { heartbeat: false });
      await page.waitForFunction(() => document.querySelector('#board-uno')?.textContent?.includes('leased'), undefined, { timeout: 20_000 });
      expect(await page.textContent('#board-uno')).toContain('browser-agent');
      await session.end();
      await page.waitForFunction(() => document.querySelector('#board-uno')?.textContent?.includes('free'), undefined, { timeout: 20_000 });
    } finally {
      await page.close();
    }
  }, 60_000);
});
