import { describe, expect, it } from 'vitest';
import { flashJunit, SerialWatch } from './serial-verdict.js';

describe('SerialWatch', () => {
  it('passes on the expected text even across chunks, and fails first on the fail text', () => {
    const watch = new SerialWatch({ expectText: 'tick 2', failText: 'PANIC' });
    expect(watch.feed('tick 1\r\nti')).toBeUndefined();
    expect(watch.feed('ck 2\r\n')).toEqual({ outcome: 'passed', reason: 'the firmware printed "tick 2"' });
    const failing = new SerialWatch({ expectText: 'ok', failText: 'PANIC' });
    expect(failing.feed('ok PANIC')).toMatchObject({ outcome: 'failed' });
  });

  it('matches a regex over everything printed so far, and says whether anything is expected', () => {
    const watch = new SerialWatch({ expectRegex: /board=(\w+)\r\n.*tick 3/s });
    expect(watch.expectsSomething).toBe(true);
    watch.feed('hilbench hello board=pico\r\ntick 1\r\n');
    expect(watch.feed('tick 2\r\ntick 3\r\n')).toMatchObject({ outcome: 'passed' });
    expect(new SerialWatch({ failText: 'x' }).expectsSomething).toBe(false);
  });

  it('writes a JUnit case with the serial output and the failure', () => {
    const xml = flashJunit({ name: 'pico hello.elf', seconds: 1.5, outcome: 'timeout', reason: 'no "ready" within 2 s', serial: 'boot <ok>\u0001\r\n' });
    expect(xml).toContain('<failure type="timeout" message="no &quot;ready&quot; within 2 s">');
    expect(xml).toContain('<system-out>boot &lt;ok&gt;\r\n</system-out>');
  });
});
