import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { hilbenchCli } from '../support/compiled-cli.js';

/**
 * `hilbench flash` on QEMU prints the firmware's first UART line while the capture window is still
 * open (issue 11, "Done when"): the line is on stdout and the process has not ended.
 */
const root = path.resolve(import.meta.dirname, '../..');

describe('hilbench flash on QEMU', () => {
  it('shows the first UART line before the capture window ends', { timeout: 60_000 }, async () => {
    const child = execa('node', [hilbenchCli, 'flash', path.join(root, 'firmware/examples/netduinoplus2/hello.elf'), '--board', 'netduinoplus2', '--backend', 'qemu', '--timeout', '30'], {
      reject: false,
    });
    try {
      const firstLine = await new Promise<string>((resolve, reject) => {
        let seen = '';
        child.stdout?.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const line = /^hilbench hello board=netduinoplus2\r?\n/m.exec(seen);
          if (line) resolve(line[0]);
        });
        void child.then((r) => reject(new Error(`hilbench flash ended before printing its first line (${r.exitCode}): ${r.stdout} ${r.stderr}`)));
      });
      expect(firstLine).toMatch(/^hilbench hello board=netduinoplus2/);
      // Still capturing: the 30 s window is open.
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGTERM');
      await child;
    }
  });
});
