import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMEOUT_MS, parseScenario } from './load-scenario.js';
import { ScenarioError } from './scenario-error.js';
import { durationMs } from './scenario-schema.js';

function problems(source: string): string[] {
  try {
    parseScenario(source, 'test.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ScenarioError);
    expect((err as ScenarioError).kind).toBe('invalid');
    return [...(err as ScenarioError).issues];
  }
  throw new Error('expected the scenario to be refused');
}

describe('parseScenario', () => {
  it('reads a valid file with defaults', () => {
    const s = parseScenario('version: 1\nname: x\nboard: pico\nsteps:\n  - delay: 500ms\n  - name: boot\n    wait-serial: { text: hi, timeout: 2s, clock: wall }\n', 'x.yaml');
    expect(s).toMatchObject({ version: 1, name: 'x', clock: 'simulated', timeoutMs: DEFAULT_TIMEOUT_MS, board: 'pico', vars: {} });
    expect(s.steps).toEqual([
      { kind: 'delay', body: '500ms' },
      { kind: 'wait-serial', name: 'boot', body: { text: 'hi', timeout: '2s', clock: 'wall' } },
    ]);
  });

  it('accepts JSON', () => {
    const s = parseScenario(JSON.stringify({ version: 1, name: 'j', steps: [{ register: { as: 'a' } }] }), 'x.json');
    expect(s.steps[0]).toEqual({ kind: 'register', body: { as: 'a' } });
  });

  it('reports every problem at once, each with its path, and refuses unknown keys', () => {
    const issues = problems(
      [
        'version: 2',
        'name: ""',
        'colour: red',
        'steps:',
        '  - delay: 1s',
        '  - wait-serial: { text: a, timeout: soon }',
        '  - wait-serial: { txt: a }',
        '  - wiat-serial: { text: a }',
        '  - { delay: 1s, write-serial: x }',
        '  - http: { method: FETCH, path: / }',
        '  - wait-serial: { regex: "(" }',
        '  - open-session: { token: t }',
      ].join('\n'),
    );
    const text = issues.join('\n');
    expect(text).toMatch(/^version: /m);
    expect(text).toMatch(/^name: /m);
    expect(text).toMatch(/^\(file\): .*colour/m);
    expect(text).toMatch(/^steps\[1\]\.wait-serial\.timeout: expected a duration/m);
    expect(text).toMatch(/^steps\[2\]\.wait-serial: .*txt/m);
    expect(text).toMatch(/^steps\[3\]: unknown key "wiat-serial"/m);
    expect(text).toMatch(/^steps\[4\]: expected exactly one command, found delay and write-serial/m);
    expect(text).toMatch(/^steps\[5\]\.http\.method: /m);
    expect(text).toMatch(/^steps\[6\]\.wait-serial\.regex: /m);
    expect(text).toMatch(/^steps\[7\]\.open-session\.board: required/m);
    expect(issues.some((i) => i.startsWith('steps[0]'))).toBe(false);
  });

  it('refuses a wait-serial with neither or both of text and regex', () => {
    expect(problems('version: 1\nname: x\nsteps:\n  - wait-serial: {}\n')).toEqual(['steps[0].wait-serial: give text or regex']);
    expect(problems('version: 1\nname: x\nsteps:\n  - wait-serial: { text: a, regex: b }\n')).toEqual(['steps[0].wait-serial: give text or regex, not both']);
  });

  it('applies the load rules each step file states (write-serial, http, steps on a board)', () => {
    const head = 'version: 1\nname: x\nsteps:\n';
    expect(problems(`${head}  - write-serial: { text: a, bytes: [1] }\n`)).toEqual(['steps[0].write-serial: give text or bytes (one of them)']);
    expect(problems(`${head}  - http: { method: POST, path: /, form: { a: b }, body: c }\n`)).toEqual(['steps[0].http: give one body (form, body given)']);
    expect(problems(`${head}  - flash: { firmware: f.elf }\n  - device-flash: { firmware: f.elf }\n  - register: {}\n`)).toEqual([
      'steps[0].flash.board: required (no board at the top of the file)',
      'steps[1].device-flash.board: required (no board at the top of the file)',
    ]);
  });

  it('refuses broken YAML and duplicate keys', () => {
    expect(problems('version: 1\nname: [\n')[0]).toMatch(/^\(file\): /);
    expect(problems('version: 1\nversion: 1\nname: x\nsteps: [ { delay: 1s } ]\n')[0]).toMatch(/^\(file\): .*unique/i);
  });

  it('needs at least one step', () => {
    expect(problems('version: 1\nname: x\nsteps: []\n')[0]).toMatch(/^steps: /);
  });
});

describe('durationMs', () => {
  it('reads units and bare milliseconds', () => {
    expect(durationMs('500ms')).toBe(500);
    expect(durationMs('1.5s')).toBe(1500);
    expect(durationMs('2m')).toBe(120_000);
    expect(durationMs('1h')).toBe(3_600_000);
    expect(durationMs(250)).toBe(250);
    expect(() => durationMs('soon')).toThrow(/not a duration/);
  });
});

describe('parseScenario: audit 6 validation gaps', () => {
  const head = 'version: 1\nname: x\nboard: pico\nsteps:\n';
  it('idle-seconds and uart-seconds take a number or one ${variable}, not any text', () => {
    expect(problems(`${head}  - open-session: { token: t, idle-seconds: soon }\n  - flash: { token: t, firmware: f.elf, uart-seconds: "1 s" }\n  - open-session: { token: t, idle-seconds: "-1" }\n`)).toEqual([
      'steps[0].open-session.idle-seconds: expected a number or one ${variable}',
      'steps[1].flash.uart-seconds: expected a number or one ${variable}',
      'steps[2].open-session.idle-seconds: expected a number or one ${variable}',
    ]);
    const ok = parseScenario(`${head}  - open-session: { token: t, idle-seconds: 90 }\n  - flash: { token: t, firmware: f.elf, uart-seconds: "\${secs}" }\n  - open-session: { token: t, idle-seconds: "0.5" }\n`, 'x.yaml');
    expect(ok.steps).toHaveLength(3);
  });

  it('compiles every $regex in expect.json, expect.json-exact and a bulletin json at load', () => {
    expect(
      problems(
        `${head}  - register: { expect: { json: { token: { $regex: "(" }, list: [ { a: { $regex: "[" } } ] } } }\n  - http: { method: GET, path: /, expect: { json-exact: { $not: { $regex: "*x" } } } }\n  - expect-bulletin: { item: i, node: n, json: { value: { $regex: "(" } } }\n`,
      ).map((p) => p.replace(/: Invalid regular expression.*$/, ': bad')),
    ).toEqual([
      'steps[0].register.expect.json.token.$regex: bad',
      'steps[0].register.expect.json.list[0].a.$regex: bad',
      'steps[1].http.expect.json-exact.$not.$regex: bad',
      'steps[2].expect-bulletin.json.value.$regex: bad',
    ]);
    // Variables inside a pattern are only known at run time: they do not make it invalid.
    expect(parseScenario(`${head}  - register: { expect: { json: { detail: { $regex: "board \${board} is (leased|busy)" } } } }\n`, 'x.yaml').steps).toHaveLength(1);
  });

  it('refuses not without text or regex', () => {
    expect(problems(`${head}  - wait-serial: { not: true, text: a }\n  - register: { expect: { not: true } }\n`)).toEqual(['steps[1].register.expect.not: negates text or regex, and neither is given']);
    expect(problems(`${head}  - wait-serial: { not: true }\n`)).toContain('steps[0].wait-serial.not: negates text or regex, and neither is given');
  });
});

describe("parseScenario: Wokwi's own forms", () => {
  const head = 'version: 1\nname: x\nboard: pico\nsteps:\n';
  it("accepts wait-serial: 'text', write-serial: [bytes] and pin as an alias of name", () => {
    const s = parseScenario(
      `${head}  - wait-serial: 'tick 1'\n  - write-serial: [104, 105]\n  - expect-pin: { part-id: led1, pin: A, value: 1 }\n  - set-control: { part-id: btn1, name: pressed, value: 1 }\n`,
      'x.yaml',
    );
    expect(s.steps).toEqual([
      { kind: 'wait-serial', body: { text: 'tick 1' } },
      { kind: 'write-serial', body: { bytes: [104, 105] } },
      { kind: 'expect-pin', body: { 'part-id': 'led1', name: 'A', value: 1 } },
      { kind: 'set-control', body: { 'part-id': 'btn1', name: 'pressed', value: 1 } },
    ]);
  });

  it('still refuses what the short forms do not cover', () => {
    const issues = problems(`${head}  - write-serial: [104, 256]\n  - expect-pin: { pin: A, name: B, value: 1 }\n  - set-control: { value: 1 }\n  - wait-serial: ''\n`);
    expect(issues.some((i) => i.startsWith('steps[0].write-serial'))).toBe(true);
    expect(issues).toContain('steps[1].expect-pin: give name (or its alias pin), one of them');
    expect(issues).toContain('steps[2].set-control: give name (or its alias pin), one of them');
    expect(issues.some((i) => i.startsWith('steps[3].wait-serial'))).toBe(true);
  });
});
