import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { EmulatorProcess } from '../process/emulator-process.js';
import { RenodeCommandError, RenodeMonitor, RenodeMonitorGone } from './renode-monitor.js';

/**
 * The monitor client against scripted consoles (sh reading stdin), so each prompt layout Renode
 * can produce is pinned down: prompts without newlines, several prompts on one line, log lines
 * between, error lines, a console that exits or never answers.
 */
function consoleScript(script: string) {
  const child = new EmulatorProcess('sh', ['-c', script], { clock: systemClock, killGraceMs: 500, stdin: 'pipe' });
  return { child, monitor: new RenodeMonitor(child, systemClock) };
}

describe('RenodeMonitor', () => {
  it('waits for each prompt, with prompts sharing lines and logs in between', async () => {
    const { child, monitor } = consoleScript(
      [
        'printf "12:00:00.0000 [INFO] Loaded monitor commands from: x\\nRenode, version 1.16.1.0\\n(monitor) "',
        'read a; printf "12:00:00.0100 [INFO] System bus created.\\n(dut) "',
        'read b; printf "(dut) "',
        'read c; printf "12:00:00.0200 [INFO] sysbus: Loading block of 10 bytes length at 0x8000000.\\n(dut) "',
        'read d; printf "Starting emulation...\\n12:00:00.0300 [INFO] dut: Machine started.\\n(dut) "',
        'read e',
      ].join('; '),
    );
    const logs: string[] = [];
    monitor.onLog((line) => logs.push(line.message));
    try {
      await monitor.ready(5000);
      expect(monitor.prompt).toBe('monitor');
      await expect(monitor.execute('mach create "dut"', 5000)).resolves.toEqual(['12:00:00.0100 [INFO] System bus created.']);
      expect(monitor.prompt).toBe('dut');
      await expect(monitor.execute('machine LoadPlatformDescription @p.repl', 5000)).resolves.toEqual([]);
      await expect(monitor.execute('sysbus LoadELF @/x.elf', 5000)).resolves.toHaveLength(1);
      await expect(monitor.execute('start', 5000)).resolves.toEqual(['Starting emulation...', '12:00:00.0300 [INFO] dut: Machine started.']);
      expect(logs).toContain('Machine started.');
    } finally {
      await child.stop();
    }
  });

  it('throws RenodeCommandError with the output when the monitor reports an error', async () => {
    const { child, monitor } = consoleScript(
      'printf "(monitor) "; read a; printf "There was an error executing command \'sysbus LoadELF @/nope\'\\nError while loading ELF: Could not find file \'/nope\'.\\n(dut) "; read b',
    );
    try {
      await monitor.ready(5000);
      const error = await monitor.execute('sysbus LoadELF @/nope', 5000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RenodeCommandError);
      expect((error as RenodeCommandError).output).toEqual([
        "There was an error executing command 'sysbus LoadELF @/nope'",
        "Error while loading ELF: Could not find file '/nope'.",
      ]);
      expect((error as Error).message).toContain('Could not find file');
    } finally {
      await child.stop();
    }
  });

  it('reports a console that exits or stays silent, naming what it waited for', async () => {
    const exits = consoleScript('printf "(monitor) "; read a; exit 3');
    await exits.monitor.ready(5000);
    await expect(exits.monitor.execute('start', 5000)).rejects.toMatchObject({ reason: 'exited', message: expect.stringContaining('status 3') });

    const silent = consoleScript('printf "(monitor) "; read a; sleep 30');
    try {
      await silent.monitor.ready(5000);
      const error = await silent.monitor.execute('start', 200).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RenodeMonitorGone);
      expect((error as RenodeMonitorGone).message).toBe('timed out after 200 ms waiting for the Renode monitor prompt after `start`');
    } finally {
      await silent.child.stop();
    }
  });
});
