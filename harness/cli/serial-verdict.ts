/** What `hilbench flash` watches the serial output for (docs/cli.md). */
export interface SerialExpectations {
  /** Pass as soon as this text appears. */
  expectText?: string;
  /** Pass as soon as this pattern matches the output so far. */
  expectRegex?: RegExp;
  /** Fail as soon as this text appears. */
  failText?: string;
}

export type SerialVerdict = { outcome: 'passed'; reason: string } | { outcome: 'failed'; reason: string };

/**
 * Reads serial output as it arrives and decides as soon as it can: the fail text wins when both
 * appear in one chunk (a firmware that printed its failure has failed). Matches across chunk
 * boundaries; keeps only as much text as the longest needle needs (or all of it for a regex).
 */
export class SerialWatch {
  private text = '';
  private decided: SerialVerdict | undefined;

  constructor(private readonly expect: SerialExpectations) {}

  /** Whether anything is expected (without an expectation, the run's own end decides). */
  get expectsSomething(): boolean {
    return this.expect.expectText !== undefined || this.expect.expectRegex !== undefined;
  }

  feed(chunk: string): SerialVerdict | undefined {
    if (this.decided) return this.decided;
    this.text += chunk;
    const { expectText, expectRegex, failText } = this.expect;
    if (failText !== undefined && this.text.includes(failText)) this.decided = { outcome: 'failed', reason: `the firmware printed the fail text ${JSON.stringify(failText)}` };
    else if (expectText !== undefined && this.text.includes(expectText)) this.decided = { outcome: 'passed', reason: `the firmware printed ${JSON.stringify(expectText)}` };
    else if (expectRegex !== undefined && expectRegex.test(this.text)) this.decided = { outcome: 'passed', reason: `the output matched ${String(expectRegex)}` };
    if (!expectRegex) {
      const keep = Math.max(expectText?.length ?? 0, failText?.length ?? 0);
      if (this.text.length > keep * 2 + 4096) this.text = this.text.slice(-keep);
    }
    return this.decided;
  }

  get verdict(): SerialVerdict | undefined {
    return this.decided;
  }
}

/** Exit codes of `hilbench flash`, as Wokwi's CLI: 0 passed, 1 failed, 42 timed out; and 2: it never ran (refused, unreachable, bad arguments, no such board; docs/cli.md). */
export const FLASH_EXIT = { passed: 0, failed: 1, timeout: 42, neverRan: 2 } as const;

/** A JUnit report of one flash run: one test case, its serial output in `<system-out>`. */
export function flashJunit(options: { name: string; seconds: number; outcome: 'passed' | 'failed' | 'timeout'; reason: string; serial: string }): string {
  const esc = (s: string) => s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');
  const failure = options.outcome === 'passed' ? '' : `<failure type="${options.outcome}" message="${esc(options.reason)}">${esc(options.reason)}</failure>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites tests="1" failures="${options.outcome === 'passed' ? 0 : 1}" time="${options.seconds.toFixed(3)}">`,
    `  <testsuite name="hilbench flash" tests="1" failures="${options.outcome === 'passed' ? 0 : 1}" time="${options.seconds.toFixed(3)}">`,
    `    <testcase classname="hilbench flash" name="${esc(options.name)}" time="${options.seconds.toFixed(3)}">${failure}<system-out>${esc(options.serial)}</system-out></testcase>`,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
