import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCommand } from '../../bin/run-command.js';

/**
 * `hilbench run --verbose` on QEMU shows the firmware's first UART line while the capture still
 * runs: the banner reaches the output before the step that captures it (a 3 s delay of the
 * device) has ended. Order of events, not wall time, is what is checked.
 */
const root = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-verbose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('prints the first UART line before the capture window ends', async () => {
  mkdirSync(path.join(dir, 'firmware'));
  copyFileSync(path.join(root, 'firmware/examples/netduinoplus2/hello.elf'), path.join(dir, 'firmware/hello.elf'));
  const file = path.join(dir, 'live.yaml');
  writeFileSync(file, 'version: 1\nname: live\nboard: netduinoplus2\nsteps:\n  - device-flash: { firmware: firmware/hello.elf }\n  - name: capture\n    delay: 3s\n');
  const events: string[] = [];
  const code = await runCommand({ files: [file], backend: 'qemu', verbose: true, print: (line) => events.push(`line: ${line}`), writeSerial: (text) => events.push(`serial: ${text}`) });
  expect(code, events.join('\n')).toBe(0);
  // Serial output comes in whatever pieces QEMU wrote: the banner is complete at the first event where the text so far holds it.
  let serialSoFar = '';
  const banner = events.findIndex((e) => (serialSoFar += e.startsWith('serial: ') ? e.slice(8) : '').includes('hilbench hello board=netduinoplus2'));
  const captureEnded = events.findIndex((e) => /line: {3}passed {2}steps\[1\] delay \("capture"\)/.test(e));
  expect(banner).toBeGreaterThanOrEqual(0);
  expect(captureEnded).toBeGreaterThan(banner);
}, 60_000);
