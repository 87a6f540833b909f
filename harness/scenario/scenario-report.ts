import path from 'node:path';
import { isoFromMs } from '../../core/clock.js';
import type { ScenarioResult } from './run-scenario.js';

/**
 * CI reports of a `hilbench run`: JUnit XML (one testsuite per scenario file, one testcase per
 * step, as most CI servers render it) and a JSON document (docs/scenarios.md, "Reports").
 */

export const SCENARIO_REPORT_VERSION = 1;

/** Exit code of a run (docs/scenarios.md): 2 invalid/unsupported, 1 a failure, 42 only timeouts, 0 all passed or skipped. */
export function exitCodeOf(results: readonly ScenarioResult[]): 0 | 1 | 2 | 42 {
  if (results.some((r) => r.status === 'invalid' || r.status === 'unsupported')) return 2;
  if (results.some((r) => r.status === 'failed')) return 1;
  if (results.some((r) => r.status === 'timeout')) return 42;
  return 0;
}

export function jsonReport(results: readonly ScenarioResult[], options: { generatedAtMs: number }): Record<string, unknown> {
  const count = (s: string) => results.filter((r) => r.status === s).length;
  return {
    version: SCENARIO_REPORT_VERSION,
    generated_at: isoFromMs(options.generatedAtMs),
    exit_code: exitCodeOf(results),
    totals: {
      scenarios: results.length,
      passed: count('passed'),
      failed: count('failed'),
      timeout: count('timeout'),
      skipped: count('skipped'),
      invalid: count('invalid'),
      unsupported: count('unsupported'),
    },
    scenarios: results,
  };
}

const xmlEscape = (s: string) =>
  // XML 1.0 forbids most control characters even escaped: drop them (UART output may carry any byte).
  s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '').replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] as string);

export function junitReport(results: readonly ScenarioResult[], options: { cwd?: string } = {}): string {
  const cwd = options.cwd ?? process.cwd();
  const suites = results.map((r) => {
    const file = path.relative(cwd, r.file) || r.file;
    const cases: string[] = [];
    if (r.status === 'skipped') {
      cases.push(`    <testcase classname="${xmlEscape(file)}" name="${xmlEscape(r.name)}" time="0"><skipped message="${xmlEscape(r.skipReason ?? '')}"/></testcase>`);
    } else if ((r.status === 'invalid' || r.status === 'unsupported') && !r.failure?.step) {
      cases.push(
        `    <testcase classname="${xmlEscape(file)}" name="${xmlEscape(r.name)}" time="0"><error type="${r.status}" message="${xmlEscape(r.failure?.message.split('\n')[0] ?? r.status)}">${xmlEscape(r.failure?.message ?? '')}</error></testcase>`,
      );
    } else {
      for (const s of r.steps) {
        const name = `steps[${s.index}] ${s.kind}${s.name ? ` ${s.name}` : ''}`;
        const open = `    <testcase classname="${xmlEscape(`${file} ${r.name}`)}" name="${xmlEscape(name)}" time="${(s.hostMs / 1000).toFixed(3)}"`;
        if (s.status === 'passed') cases.push(`${open}/>`);
        else if (s.status === 'not-run') cases.push(`${open}><skipped message="not run: an earlier step failed"/></testcase>`);
        else {
          const f = r.failure;
          const body = [f?.message, f?.expected !== undefined ? `expected: ${f.expected}` : '', f?.actual !== undefined ? `actual: ${f.actual}` : '', f?.at ? `at: ${f.at}` : '', ...(f?.uartTail.length ? ['last UART lines:', ...f.uartTail] : [])]
            .filter(Boolean)
            .join('\n');
          cases.push(`${open}><failure type="${r.status}" message="${xmlEscape(f?.message.split('\n')[0] ?? 'failed')}">${xmlEscape(body)}</failure></testcase>`);
        }
      }
    }
    const tests = cases.length;
    const failures = r.status === 'failed' || r.status === 'timeout' ? 1 : 0;
    const errors = r.status === 'invalid' || r.status === 'unsupported' ? 1 : 0;
    const skipped = r.status === 'skipped' ? 1 : r.steps.filter((s) => s.status === 'not-run').length;
    return `  <testsuite name="${xmlEscape(`${file}: ${r.name}`)}" tests="${tests}" failures="${failures}" errors="${errors}" skipped="${skipped}" time="${(r.hostMs / 1000).toFixed(3)}">\n${cases.join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="hilbench scenarios">\n${suites.join('\n')}\n</testsuites>\n`;
}
