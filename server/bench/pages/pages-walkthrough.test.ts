import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { makeElf } from '../../../test/support/make-elf.js';
import { type BenchTestApp, startBenchTestApp } from '../../../test/support/bench-test-app.js';

/**
 * The agent walk-through printed on `/` is documentation people paste into a shell. This runs it,
 * exactly as the page shows it, against the whole bench service (mock backend, loopback), so the
 * page cannot drift from the API.
 */

const execFileAsync = promisify(execFile);

function hasTools(...tools: string[]): boolean {
  try {
    for (const tool of tools) execFileSync(tool, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function decodeEntities(text: string): string {
  return text.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

let app: BenchTestApp | undefined;
let workDir: string | undefined;

afterEach(async () => {
  await app?.close();
  if (app) rmSync(app.dataDir, { recursive: true, force: true });
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  app = undefined;
  workDir = undefined;
});

describe('the curl walk-through on /', () => {
  it.skipIf(!hasTools('curl', 'jq', 'bash'))('registers, opens a session, flashes, waits for the job, heartbeats and ends against the real service', async () => {
    app = await startBenchTestApp();
    const page = await (await app.request('/')).text();
    const connect = page.slice(page.indexOf('<section id="connect">'));
    const script = decodeEntities(/<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(connect)?.[1] ?? '');
    const lines = script.split('\n');
    // The page speaks of the public base URL; the test server listens elsewhere.
    expect(lines[0]).toBe('BASE=http://bench.test');
    lines[0] = `BASE=${app.url}`;
    const board = /-d board=(\S+) /.exec(script)?.[1];
    expect(board).toBeDefined();
    // One request that answers when the job ends, not a polling loop (the README's walk-through does the same).
    expect(script).toContain('/api/v1/jobs/$JOB?wait=60');
    expect(script).not.toContain('sleep');

    workDir = mkdtempSync(join(tmpdir(), 'hilbench-walkthrough-'));
    writeFileSync(join(workDir, 'firmware.elf'), makeElf());
    const { stdout } = await execFileAsync('bash', ['-c', `set -e\n${lines.join('\n')}`], { cwd: workDir, timeout: 60_000 });

    expect(stdout).toMatch(/^done$/m);
    expect(stdout).toContain(`hilbench-mock: reset ${board}`);
    const sessions = [...stdout.matchAll(/\{"session_id"[^}]*\}/g)].map((m) => JSON.parse(m[0]) as { state: string });
    expect(sessions.map((s) => s.state)).toEqual(['active', 'ended']);
  });
});
