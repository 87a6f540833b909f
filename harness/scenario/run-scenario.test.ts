import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers, foregroundClock } from '../../core/clock.js';
import { parseScenario } from './load-scenario.js';
import { describeFailure, runScenario } from './run-scenario.js';
import { ScenarioError } from './scenario-error.js';
import { exitCodeOf, jsonReport, junitReport } from './scenario-report.js';
import type { ScenarioTarget } from './scenario-target.js';

const boards = loadBoardCatalog();
// Firmware paths in these scenarios are relative to scenarios/ (a file "there").
const scenarioFile = path.resolve('scenarios/inline-test.yaml');

function deviceTarget(backend = new MockBackend()): ScenarioTarget {
  const fake = createClock(Date.UTC(2026, 0, 1));
  return { description: 'mock device only', clock: clockFromFakeTimers(fake), realClock: foregroundClock, advance: async (ms) => void (await fake.tickAsync(ms)), simulatedHost: true, backend, boards };
}

const scenario = (steps: string, header = '') => parseScenario(`version: 1\nname: inline\nboard: pico\ntimeout: 1s\n${header}steps:\n${steps}`, scenarioFile);
const flash = '  - device-flash: { firmware: ../firmware/examples/pico/hello.elf }\n';

describe('runScenario on a device', () => {
  it('passes waits that match, consuming output so the same line is not matched twice', async () => {
    const ok = await runScenario(scenario(`${flash}  - wait-serial: { text: "tick 1" }\n  - wait-serial: { regex: "tick [2-3]" }\n`), deviceTarget());
    expect(ok.status, describeFailure(ok)).toBe('passed');
    const twice = await runScenario(scenario(`${flash}  - wait-serial: { text: "tick 1" }\n  - name: again\n    wait-serial: { text: "tick 1", timeout: 500ms }\n`), deviceTarget());
    expect(twice.status).toBe('timeout');
    expect(twice.failure?.step).toEqual({ index: 2, kind: 'wait-serial', name: 'again' });
  });

  it('a timeout names the step, the wait, the clock, the device time and the last UART lines', async () => {
    const r = await runScenario(scenario(`${flash}  - delay: 200ms\n  - wait-serial: { text: "never printed", timeout: 300ms }\n`), deviceTarget());
    expect(r.status).toBe('timeout');
    expect(r.steps.map((s) => s.status)).toEqual(['passed', 'passed', 'failed']);
    expect(r.failure).toMatchObject({ kind: 'timeout', step: { index: 2, kind: 'wait-serial' }, expected: '"never printed"' });
    expect(r.failure?.message).toMatch(/timed out after 300 ms \(simulated clock\) waiting for "never printed"/);
    expect(r.failure?.at).toMatch(/device pico at 500\.000 ms simulated time/);
    expect(r.failure?.uartTail.at(-1)).toBe('hilbench-mock: tick 5');
    const text = describeFailure(r);
    expect(text).toContain('inline-test.yaml: inline: TIMEOUT at steps[2] wait-serial');
    expect(text).toContain('    | hilbench-mock: tick 5');
  });

  it('not: fails when the text shows up within the timeout', async () => {
    const r = await runScenario(scenario(`${flash}  - wait-serial: { text: "tick 3", not: true, timeout: 500ms }\n`), deviceTarget());
    expect(r.status).toBe('failed');
    expect(r.failure?.message).toMatch(/"tick 3" appeared, and must not/);
    const fine = await runScenario(scenario(`${flash}  - wait-serial: { text: "panic", not: true, timeout: 500ms }\n`), deviceTarget());
    expect(fine.status).toBe('passed');
  });

  it('fail-text fails at once, even when the awaited text came too', async () => {
    const r = await runScenario(scenario(`${flash}  - wait-serial: { text: "tick 5" }\n`, 'fail-text: ["tick 2"]\n'), deviceTarget());
    expect(r.status).toBe('failed');
    expect(r.failure?.message).toBe('fail-text "tick 2" appeared in the UART output of pico');
    expect(r.failure?.at).toMatch(/device pico at 200\.000 ms/);
    const ok = await runScenario(scenario(`${flash}  - wait-serial: { text: "tick 5" }\n`, 'fail-text: [HardFault]\n'), deviceTarget());
    expect(ok.status).toBe('passed');
  });

  it('expect-exit fails on a firmware that keeps running', async () => {
    const r = await runScenario(scenario(`${flash}  - expect-exit: { code: 0, timeout: 300ms }\n`), deviceTarget());
    expect(r.status).toBe('timeout');
    expect(r.failure?.actual).toBe('still running');
  });

  it('refuses pin steps before the first step runs: the backend does not model pins', async () => {
    const r = await runScenario(scenario(`${flash}  - expect-pin: { part-id: led1, name: A, value: 1 }\n`), deviceTarget());
    expect(r.status).toBe('unsupported');
    expect(r.failure?.message).toMatch(/steps\[1\] expect-pin: backend mock does not model the pins of pico/);
    expect(r.steps.every((s) => s.status === 'not-run')).toBe(true);
  });

  it('refuses service steps on a target without the service, before running anything', async () => {
    const r = await runScenario(scenario(`${flash}  - register: { as: a }\n  - create-node: { as: n }\n`), deviceTarget());
    expect(r.status).toBe('unsupported');
    expect(r.failure?.issues).toEqual([expect.stringMatching(/steps\[1\] register: needs a bench service/), expect.stringMatching(/steps\[2\] create-node: needs a relay service/)]);
    expect(r.steps[0]?.status).toBe('not-run');
  });

  it('refuses device steps on a board the backend cannot run, or an unknown one, before the first step', async () => {
    const offline = await runScenario(scenario(flash), deviceTarget(new MockBackend({ unavailable: { pico: 'probe unplugged' } })));
    expect(offline.status).toBe('unsupported');
    expect(offline.failure?.issues).toEqual(['steps[0] device-flash: backend mock cannot run pico here: probe unplugged']);
    const unknown = await runScenario(scenario('  - device-flash: { board: "${b}", firmware: ../firmware/examples/pico/hello.elf }\n'), deviceTarget(), { vars: { b: 'nonesuch' } });
    expect(unknown.status).toBe('unsupported');
    expect(unknown.failure?.message).toMatch(/unknown board nonesuch \(known: .*pico/);
  });

  it('skips a scenario whose backends exclude the target backend', async () => {
    const r = await runScenario(scenario(flash, 'backends: [sim]\n'), deviceTarget());
    expect(r).toMatchObject({ status: 'skipped', skipReason: expect.stringMatching(/runs only on sim; the target's backend is mock/) });
  });

  it('a device error is a failure with the backend kind', async () => {
    const r = await runScenario(scenario('  - device-flash: { firmware: ../firmware/examples/uno/hello.elf }\n'), deviceTarget());
    expect(r.status).toBe('failed');
    expect(r.failure?.message).toMatch(/device-flash on mock: bad-image: /);
  });

  it('an unknown variable fails the step that uses it', async () => {
    const r = await runScenario(scenario(`${flash}  - write-serial: "\${missing}"\n`), deviceTarget());
    expect(r.status).toBe('failed');
    expect(r.failure?.message).toMatch(/\$\{missing\} is not set/);
  });
});

describe('reports', () => {
  it('exit codes: 2 over 1 over 42 over 0', async () => {
    const pass = await runScenario(scenario(flash), deviceTarget());
    const timeout = await runScenario(scenario(`${flash}  - wait-serial: { text: zzz, timeout: 100ms }\n`), deviceTarget());
    const failed = await runScenario(scenario(`${flash}  - wait-serial: { text: "tick 1", not: true }\n`), deviceTarget());
    const unsupported = await runScenario(scenario('  - expect-pin: { name: A, value: 1 }\n'), deviceTarget());
    expect(exitCodeOf([pass])).toBe(0);
    expect(exitCodeOf([pass, timeout])).toBe(42);
    expect(exitCodeOf([pass, timeout, failed])).toBe(1);
    expect(exitCodeOf([failed, unsupported])).toBe(2);
    expect(jsonReport([pass, timeout], { generatedAtMs: 0 })).toMatchObject({ exit_code: 42, totals: { scenarios: 2, passed: 1, timeout: 1 } });
  });

  it('JUnit: one testcase per scenario, the failure with its step and escaped detail, the serial log in system-out', async () => {
    const r = await runScenario(scenario(`${flash}  - wait-serial: { text: "<&\\"'>", timeout: 100ms }\n  - delay: 1s\n`), deviceTarget());
    const xml = junitReport([r], { cwd: path.resolve('.') });
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="hilbench scenarios" tests="1" failures="1" errors="0" skipped="0" time="[\d.]+">/);
    expect(xml).toContain('<testsuite name="scenarios/inline-test.yaml" tests="1" failures="1" errors="0" skipped="0"');
    expect(xml).toContain('<testcase classname="scenarios/inline-test.yaml" name="inline"');
    expect(xml).toMatch(/<failure type="timeout" message="[^"]*">at steps\[1\] wait-serial\n/);
    expect(xml).toContain('&lt;&amp;\\&quot;&apos;&gt;');
    expect(xml).toMatch(/<system-out>--- device pico ---\nhilbench-mock: reset pico\r\n[\s\S]*hilbench-mock: tick 1\r\n[\s\S]*<\/system-out>/);
    expect(xml).not.toMatch(/<&"'>/);
  });
});

describe("Wokwi's short forms run", () => {
  it("wait-serial: 'text' waits for the text and write-serial: [bytes] writes them", async () => {
    const backend = new MockBackend();
    const r = await runScenario(scenario(`${flash}  - wait-serial: 'tick 1'\n  - write-serial: [104, 105]\n  - wait-serial: 'hi'\n`), deviceTarget(backend));
    expect(r.status, describeFailure(r)).toBe('passed');
    const miss = await runScenario(scenario(`${flash}  - wait-serial: 'never printed'\n`), deviceTarget());
    expect(miss.status).toBe('timeout');
    expect(miss.failure?.expected).toBe('"never printed"');
  });
});

describe('JUnit totals', () => {
  it('the <testsuites> root sums every suite; unsupported is an error wherever it happens', async () => {
    const pass = await runScenario(scenario(`${flash}  - wait-serial: 'tick 1'\n`), deviceTarget());
    const fail = await runScenario(scenario(`${flash}  - wait-serial: { text: never, timeout: 100ms }\n  - delay: 1ms\n`), deviceTarget());
    // Refused before the first step (pins), and refused at a step (a handler saying unsupported).
    const refused = await runScenario(scenario(`  - expect-pin: { pin: A, value: 1 }\n`), deviceTarget());
    const refusedAtStep = await runScenario(scenario(`${flash}  - delay: 1ms\n`), deviceTarget(), {
      handlers: {
        delay: () => Promise.reject(new ScenarioError('unsupported', 'this backend cannot do that')),
      },
    });
    expect([pass.status, fail.status, refused.status, refusedAtStep.status]).toEqual(['passed', 'timeout', 'unsupported', 'unsupported']);
    const xml = junitReport([pass, fail, refused, refusedAtStep], { cwd: path.resolve('.') });
    const attrs = (tag: string) =>
      [...xml.matchAll(new RegExp(`<${tag} name="[^"]*" tests="(\\d+)" failures="(\\d+)" errors="(\\d+)" skipped="(\\d+)" time="([\\d.]+)"`, 'g'))].map((m) => m.slice(1).map(Number));
    const suites = attrs('testsuite');
    expect(suites.map((a) => a.slice(0, 4))).toEqual([
      [1, 0, 0, 0],
      [1, 1, 0, 0],
      [1, 0, 1, 0],
      [1, 0, 1, 0],
    ]);
    const [root] = attrs('testsuites');
    expect(root?.slice(0, 4)).toEqual([4, 1, 2, 0]);
    expect(root?.[4]).toBeCloseTo(suites.reduce((t, a) => t + (a[4] as number), 0), 2);
    // At a step, unsupported is an <error>, as before the first step, never a <failure>.
    expect(xml).toContain('<error type="unsupported" message="this backend cannot do that">');
    expect(xml).not.toContain('<failure type="unsupported"');
  });
});
