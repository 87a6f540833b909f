import path from 'node:path';
import { isoFromMs } from '../../core/clock.js';
import { type ScenarioResult, type ScenarioStatus, scenarioStatuses } from './run-scenario.js';

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
  const count = (s: ScenarioStatus) => results.filter((r) => r.status === s).length;
  return {
    version: SCENARIO_REPORT_VERSION,
    generated_at: isoFromMs(options.generatedAtMs),
    exit_code: exitCodeOf(results),
    totals: {
      scenarios: results.length,
      ...Object.fromEntries(scenarioStatuses.map((status) => [status, count(status)])),
    },
    scenarios: results,
  };
}

const xmlEscape = (s: string) =>
  // XML 1.0 forbids most control characters even escaped: drop them (UART output may carry any byte).
  s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '').replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] as string);

type CaseOutcome = 'passed' | 'failure' | 'error' | 'skipped';

/**
 * JUnit XML. Every count is taken from the testcases written, so suites and the `<testsuites>`
 * root always agree: `invalid` and `unsupported` are `<error>`s (the target or the file, not the
 * code under test, is at fault), at the step when one is named, else for the whole file;
 * `failed` and `timeout` are `<failure>`s; a skipped file and steps not run are `<skipped>`.
 */
export function junitReport(results: readonly ScenarioResult[], options: { cwd?: string } = {}): string {
  const cwd = options.cwd ?? process.cwd();
  const total = { tests: 0, failures: 0, errors: 0, skipped: 0, seconds: 0 };
  const suites = results.map((r) => {
    const file = path.relative(cwd, r.file) || r.file;
    const cases: Array<{ xml: string; outcome: CaseOutcome }> = [];
    const isError = r.status === 'invalid' || r.status === 'unsupported';
    const failureElement = (detail: string) => {
      const f = r.failure;
      const tag = isError ? 'error' : 'failure';
      return `<${tag} type="${r.status}" message="${xmlEscape(f?.message.split('\n')[0] ?? r.status)}">${xmlEscape(detail)}</${tag}>`;
    };
    if (r.status === 'skipped') {
      cases.push({ outcome: 'skipped', xml: `    <testcase classname="${xmlEscape(file)}" name="${xmlEscape(r.name)}" time="0"><skipped message="${xmlEscape(r.skipReason ?? '')}"/></testcase>` });
    } else if (isError && !r.failure?.step) {
      cases.push({ outcome: 'error', xml: `    <testcase classname="${xmlEscape(file)}" name="${xmlEscape(r.name)}" time="0">${failureElement(r.failure?.message ?? '')}</testcase>` });
    } else {
      for (const s of r.steps) {
        const name = `steps[${s.index}] ${s.kind}${s.name ? ` ${s.name}` : ''}`;
        const open = `    <testcase classname="${xmlEscape(`${file} ${r.name}`)}" name="${xmlEscape(name)}" time="${(s.hostMs / 1000).toFixed(3)}"`;
        if (s.status === 'passed') cases.push({ outcome: 'passed', xml: `${open}/>` });
        else if (s.status === 'not-run') cases.push({ outcome: 'skipped', xml: `${open}><skipped message="not run: an earlier step failed"/></testcase>` });
        else {
          const f = r.failure;
          const body = [f?.message, f?.expected !== undefined ? `expected: ${f.expected}` : '', f?.actual !== undefined ? `actual: ${f.actual}` : '', f?.at ? `at: ${f.at}` : '', ...(f?.uartTail.length ? ['last UART lines:', ...f.uartTail] : [])]
            .filter(Boolean)
            .join('\n');
          cases.push({ outcome: isError ? 'error' : 'failure', xml: `${open}>${failureElement(body)}</testcase>` });
        }
      }
    }
    const count = (o: CaseOutcome) => cases.filter((c) => c.outcome === o).length;
    const suite = { tests: cases.length, failures: count('failure'), errors: count('error'), skipped: count('skipped'), seconds: r.hostMs / 1000 };
    total.tests += suite.tests;
    total.failures += suite.failures;
    total.errors += suite.errors;
    total.skipped += suite.skipped;
    total.seconds += suite.seconds;
    return `  <testsuite name="${xmlEscape(`${file}: ${r.name}`)}" tests="${suite.tests}" failures="${suite.failures}" errors="${suite.errors}" skipped="${suite.skipped}" time="${suite.seconds.toFixed(3)}">\n${cases.map((c) => c.xml).join('\n')}\n  </testsuite>`;
  });
  const root = `<testsuites name="hilbench scenarios" tests="${total.tests}" failures="${total.failures}" errors="${total.errors}" skipped="${total.skipped}" time="${total.seconds.toFixed(3)}">`;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${root}\n${suites.join('\n')}\n</testsuites>\n`;
}
