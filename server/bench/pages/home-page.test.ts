import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BenchSnapshot, BoardSnapshot } from '../views/bench-snapshot.js';
import { curlWalkthrough, renderHomePage, shellQuote } from './home-page.js';
import { LIVE_HOME_SCRIPT } from './live-scripts.js';
import { renderStatsPage } from './stats-page.js';

/** Tags the templates themselves write; anything else in the output came from data. */
const OUR_TAGS = new Set(
  'html head meta title link style body header h1 h2 p nav ul li a main section table caption thead tbody tr th td strong br small code span time ol pre form input label select option textarea button dl div dt dd footer em'.split(' '),
);

const text = fc.string({ unit: 'binary', maxLength: 40 });
const nullableText = fc.option(text, { nil: null });
const boardArb: fc.Arbitrary<BoardSnapshot> = fc.record({
  id: text,
  name: text,
  description: text,
  mcu: text,
  architecture: text,
  backend: text,
  status: fc.constantFrom('free', 'leased', 'busy', 'offline'),
  offlineReason: nullableText,
  leasedBy: nullableText,
  leaseExpiresAt: fc.oneof(nullableText, fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
  queuedJobs: fc.nat(),
});
const snapshotArb: fc.Arbitrary<BenchSnapshot> = fc.record({
  generatedAt: text,
  version: text,
  boards: fc.array(boardArb, { maxLength: 4 }),
  recentActivity: fc.array(fc.record({ jobId: text, board: text, agentLabel: text, state: text, at: text }), { maxLength: 3 }),
  totals: fc.record({
    agents: fc.nat(),
    sessionsOpen: fc.nat(),
    jobsTotal: fc.nat(),
    jobsByState: fc.dictionary(text, fc.nat(), { maxKeys: 4 }),
    waitlist: fc.nat(),
  }),
});

function tagsOf(page: string): string[] {
  return [...page.matchAll(/<\/?([A-Za-z][A-Za-z0-9-]*)/g)].map((m) => (m[1] ?? '').toLowerCase());
}

describe('rendering arbitrary snapshots (property)', () => {
  it('never lets data become markup on / or /stats', () => {
    fc.assert(
      fc.property(snapshotArb, fc.integer({ min: 0, max: 4_102_444_800_000 }), (snapshot, nowMs) => {
        const pages = [
          renderHomePage({ snapshot, nowMs, publicBaseUrl: 'http://127.0.0.1:8080', csrfToken: 'v1.1.n.m', styleNonce: 'abc', joined: false }),
          renderStatsPage({ snapshot, nowMs, styleNonce: 'abc', waitlistOpen: true }),
        ];
        for (const page of pages) {
          // Our own live-update script (a constant) is markup of ours: taken out before looking for data that became markup.
          const withoutOurScript = page.replace(`<script nonce="abc">${LIVE_HOME_SCRIPT.value}</script>`, '');
          for (const tag of tagsOf(withoutOurScript)) expect(OUR_TAGS.has(tag), `unexpected tag <${tag}>`).toBe(true);
          expect(page).not.toMatch(/\son[a-z]+=/i);
          expect(page.match(/<style/g)).toHaveLength(1);
          expect(page.match(/<\/html>/g)).toHaveLength(1);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('shellQuote', () => {
  it('leaves plain words alone and single-quotes the rest so sh reads them back unchanged', () => {
    expect(shellQuote('pico')).toBe('pico');
    expect(shellQuote('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(shellQuote("it's $HOME; rm -rf /")).toBe(`'it'\\''s $HOME; rm -rf /'`);
    expect(shellQuote('')).toBe("''");
  });

  it('round-trips through sh (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }).filter((t) => !t.includes('\u0000')), (word) => {
        expect(execFileSync('sh', ['-c', `printf '%s' ${shellQuote(word)}`], { encoding: 'utf8' })).toBe(word);
      }),
      { numRuns: 25 },
    );
  });

  it('puts the base URL and board into the walk-through quoted', () => {
    const script = curlWalkthrough('https://bench.example.org', 'board with space');
    expect(script.split('\n')[0]).toBe('BASE=https://bench.example.org');
    expect(script).toContain("-d board='board with space' -d idle_seconds=90");
    expect(script).toContain("-F board='board with space' -F session=\"$SID\"");
  });
});
