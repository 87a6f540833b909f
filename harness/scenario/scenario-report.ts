import path from 'node:path';
import { isoFromMs } from '../../core/clock.js';
import { type ScenarioResult, type ScenarioStatus, scenarioStatuses } from './run-scenario.js';

/**
 * CI reports of a `hilbench run`: JUnit XML (one testcase per scenario, its serial log in
 * `<system-out>`) and a JSON document (docs/scenarios.md, "Reports").
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

/** What a failed scenario's report says: the step, the message, expected and actual, where in time, the UART tail. */
function failureDetail(r: ScenarioResult): string {
  const f = r.failure;
  if (!f) return '';
  const step = f.step ? `at steps[${f.step.index}] ${f.step.kind}${f.step.name ? ` (${JSON.stringify(f.step.name)})` : ''}` : '';
  return [step, f.message, f.expected !== undefined ? `expected: ${f.expected}` : '', f.actual !== undefined ? `actual: ${f.actual}` : '', f.at ? `at: ${f.at}` : '', ...(f.issues ?? []), ...(f.uartTail.length ? ['last UART lines:', ...f.uartTail] : [])]
    .filter(Boolean)
    .join('\n');
}

/**
 * JUnit XML: one testcase per scenario (in one testsuite per file), its serial log in
 * `<system-out>`. Counts are taken from the testcases written, so suites and the `<testsuites>`
 * root always agree: `invalid` and `unsupported` are `<error>`s (the target or the file, not the
 * code under test, is at fault); `failed` and `timeout` are `<failure>`s with the step, expected,
 * actual, time and UART tail; a skipped scenario is `<skipped>`.
 */
export function junitReport(results: readonly ScenarioResult[], options: { cwd?: string } = {}): string {
  const cwd = options.cwd ?? process.cwd();
  const total = { tests: 0, failures: 0, errors: 0, skipped: 0, seconds: 0 };
  const suites = results.map((r) => {
    const file = path.relative(cwd, r.file) || r.file;
    const outcome: CaseOutcome =
      r.status === 'skipped' ? 'skipped' : r.status === 'invalid' || r.status === 'unsupported' ? 'error' : r.status === 'passed' ? 'passed' : 'failure';
    const seconds = r.hostMs / 1000;
    const inner: string[] = [];
    if (outcome === 'skipped') inner.push(`<skipped message="${xmlEscape(r.skipReason ?? '')}"/>`);
    if (outcome === 'failure' || outcome === 'error') {
      inner.push(`<${outcome} type="${r.status}" message="${xmlEscape(r.failure?.message.split('\n')[0] ?? r.status)}">${xmlEscape(failureDetail(r))}</${outcome}>`);
    }
    if (r.serialLog) inner.push(`<system-out>${xmlEscape(r.serialLog)}</system-out>`);
    const open = `    <testcase classname="${xmlEscape(file)}" name="${xmlEscape(r.name)}" time="${seconds.toFixed(3)}"`;
    const testcase = inner.length ? `${open}>${inner.join('')}</testcase>` : `${open}/>`;
    total.tests += 1;
    if (outcome === 'failure') total.failures += 1;
    if (outcome === 'error') total.errors += 1;
    if (outcome === 'skipped') total.skipped += 1;
    total.seconds += seconds;
    const count = (o: CaseOutcome) => (outcome === o ? 1 : 0);
    return `  <testsuite name="${xmlEscape(file)}" tests="1" failures="${count('failure')}" errors="${count('error')}" skipped="${count('skipped')}" time="${seconds.toFixed(3)}">\n${testcase}\n  </testsuite>`;
  });
  const root = `<testsuites name="hilbench scenarios" tests="${total.tests}" failures="${total.failures}" errors="${total.errors}" skipped="${total.skipped}" time="${total.seconds.toFixed(3)}">`;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${root}\n${suites.join('\n')}\n</testsuites>\n`;
}
