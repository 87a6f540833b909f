import { describe, expect, it } from 'vitest';
import { flashArgs, gdbServerArgs, haltArgs, isProbeNotFound, type ProbeTarget, releaseResetArgs, toolFailure } from './probe-commands.js';
import type { ToolResult } from './run-tool.js';

const openocd: ProbeTarget = {
  kind: 'openocd',
  serialNumber: '066DFF495251',
  interface: 'interface/stlink.cfg',
  target: 'target/stm32f4x.cfg',
  resetMethod: 'system',
};
const probeRs: ProbeTarget = { kind: 'probe-rs', serialNumber: 'E6614103', vidPid: '2e8a:000c', chip: 'RP2040' };

/** OpenOCD 0.12 with no ST-LINK attached, as run on this machine kind (backends.md). */
const openocdNoProbe = `Open On-Chip Debugger 0.12.0
Licensed under GNU GPL v2
Info : auto-selecting first available session transport "hla_swd". To override use 'transport select <transport>'.
Info : clock speed 2000 kHz
Error: open failed
in procedure 'program'
** OpenOCD init failed **
shutdown command invoked
`;

const result = (over: Partial<ToolResult>): ToolResult => ({
  command: 'openocd -f interface/stlink.cfg',
  exitCode: 0,
  exitSignal: null,
  stopped: undefined,
  output: '',
  ...over,
});

describe('probe command lines', () => {
  it('flashes with OpenOCD without reset, so the core stays halted, selecting the adapter by serial', () => {
    expect(flashArgs(openocd, '/tmp/x/fw.elf')).toEqual([
      '-f',
      'interface/stlink.cfg',
      '-c',
      'adapter serial 066DFF495251',
      '-f',
      'target/stm32f4x.cfg',
      '-c',
      'program {/tmp/x/fw.elf} verify exit',
    ]);
  });

  it('releases and halts with init; reset run|halt; shutdown, hardware reset through srst', () => {
    expect(releaseResetArgs(openocd).at(-1)).toBe('init; reset run; shutdown');
    expect(haltArgs(openocd)?.at(-1)).toBe('init; reset halt; shutdown');
    const hardware = releaseResetArgs({ ...openocd, resetMethod: 'hardware', adapterSpeedKhz: 4000 });
    expect(hardware).toContain('reset_config srst_only srst_nogate');
    expect(hardware).toContain('adapter speed 4000');
    // After the target config, so the target file's own settings do not override ours.
    expect(hardware.indexOf('reset_config srst_only srst_nogate')).toBeGreaterThan(hardware.indexOf('target/stm32f4x.cfg'));
    expect(hardware.indexOf('adapter speed 4000')).toBeGreaterThan(hardware.indexOf('target/stm32f4x.cfg'));
  });

  it('drives probe-rs with --chip and a VID:PID:SERIAL selector; it has no halt', () => {
    expect(flashArgs(probeRs, '/tmp/fw.elf')).toEqual(['download', '--chip', 'RP2040', '--probe', '2e8a:000c:E6614103', '--verify', '/tmp/fw.elf']);
    expect(releaseResetArgs({ ...probeRs, protocol: 'swd' })).toEqual(['reset', '--chip', 'RP2040', '--probe', '2e8a:000c:E6614103', '--protocol', 'swd']);
    expect(haltArgs(probeRs)).toBeUndefined();
  });

  it('serves GDB on a loopback port with the core reset and halted, the same probe selection as flashing', () => {
    const server = gdbServerArgs(openocd, 40123);
    expect(server.slice(0, 6)).toEqual(flashArgs(openocd, '/x.elf').slice(0, 6));
    expect(server.slice(6)).toEqual([
      '-c',
      'bindto 127.0.0.1',
      '-c',
      'gdb_port 40123',
      '-c',
      'tcl_port disabled',
      '-c',
      'telnet_port disabled',
      '-c',
      'foreach t [target names] { $t configure -event gdb-detach { catch resume; shutdown } }',
      '-c',
      'init; reset halt',
    ]);
    expect(gdbServerArgs(probeRs, 40123)).toEqual(['gdb', '--chip', 'RP2040', '--probe', '2e8a:000c:E6614103', '--gdb-connection-string', '127.0.0.1:40123', '--reset-halt']);
  });

  it('refuses a path OpenOCD would misread', () => {
    expect(() => flashArgs(openocd, '/tmp/a{b}.elf')).toThrow(/braces/);
  });
});

describe('toolFailure', () => {
  it('is undefined for a clean exit', () => {
    expect(toolFailure('flash', 'b', result({ output: '** Programming Finished **\n** Verified OK **' }), 1000)).toBeUndefined();
  });

  it("maps OpenOCD's real no-probe output to probe-not-found, quoting exit status and tail", () => {
    const error = toolFailure('flash', 'stm32f4-discovery', result({ exitCode: 1, output: openocdNoProbe }), 1000)!;
    expect(error.kind).toBe('probe-not-found');
    expect(error.exitCode).toBe(1);
    expect(error.message).toMatch(/exit status 1/);
    expect(error.message).toContain('Error: open failed');
    expect(error.outputTail).toContain('** OpenOCD init failed **');
    expect(error.isInfrastructure).toBe(true);
  });

  it.each([
    ['Error: unable to find a matching CMSIS-DAP device'],
    ['Error: No J-Link device found'],
    ['Error: No connected probes were found.'],
    ['Error: Failed to open the debug probe.\n\nCaused by:\n    Probe was not found.'],
  ])('recognises "%s" as no probe', (line) => {
    expect(isProbeNotFound(line)).toBe(true);
  });

  it('maps programming and verify failures to flash-failed, even with exit status 0', () => {
    const failed = toolFailure('flash', 'b', result({ exitCode: 1, output: '** Programming Started **\n** Programming Failed **' }), 1000)!;
    expect(failed.kind).toBe('flash-failed');
    const verify = toolFailure('flash', 'b', result({ exitCode: 0, output: '** Verify Started **\n** Verify Failed **' }), 1000)!;
    expect(verify.kind).toBe('flash-failed');
    expect(verify.message).toContain('** Verify Failed **');
  });

  it('maps a failed release or halt to reset-failed', () => {
    const error = toolFailure('release reset', 'b', result({ exitCode: 1, output: 'Error: timed out while waiting for target halted' }), 1000)!;
    expect(error.kind).toBe('reset-failed');
    expect(error.message).toMatch(/did not reset \(exit status 1\)/);
    expect(toolFailure('halt', 'b', result({ exitCode: 1 }), 1000)!.message).toMatch(/did not halt.*it printed nothing/);
    expect(toolFailure('GDB server', 'b', result({ exitCode: 1, output: 'Error: target not examined yet' }), 1000)).toMatchObject({
      kind: 'unavailable',
      message: expect.stringMatching(/^GDB server on b .*ended before a debugger could connect \(exit status 1\)/),
    });
  });

  it('reports a killed hang as timeout with the deadline, and our own stop as cancelled', () => {
    const hang = toolFailure('flash', 'b', result({ exitCode: null, exitSignal: 'SIGTERM', stopped: 'timeout', output: 'Info : clock speed 2000 kHz' }), 1500)!;
    expect(hang.kind).toBe('timeout');
    expect(hang.message).toMatch(/within 1500 ms and was killed/);
    expect(hang.message).toContain('clock speed 2000 kHz');
    expect(toolFailure('flash', 'b', result({ exitCode: null, exitSignal: 'SIGTERM', stopped: 'cancelled' }), 1500)!.kind).toBe('cancelled');
  });

  it('maps a tool that cannot start (exit 127) to unavailable', () => {
    expect(toolFailure('flash', 'b', result({ exitCode: 127, output: 'spawn openocd ENOENT' }), 1000)!.kind).toBe('unavailable');
  });
});
