import { BackendError } from '../backend.js';
import { outputTail, type ToolResult } from './run-tool.js';

/**
 * The command lines hilbench runs on real probes, and how their output maps to `BackendError`
 * kinds. Output formats are those of OpenOCD 0.12 and probe-rs 0.32, as observed on real runs
 * (docs/backends/probe.md); test/fakes reproduce them.
 */

/** One attached probe, resolved from the bench file and the board file. */
export type ProbeTarget =
  | {
      kind: 'openocd';
      serialNumber: string;
      interface: string;
      target: string;
      adapterSpeedKhz?: number;
      resetMethod: 'system' | 'hardware';
    }
  | { kind: 'probe-rs'; serialNumber: string; vidPid: string; chip: string; protocol?: 'swd' | 'jtag' };

export type ProbeStep = 'flash' | 'release reset' | 'halt' | 'GDB server';

/** Quotes a path for an OpenOCD Tcl command: braces keep spaces and `$` literal. */
function tclPath(file: string): string {
  if (/[{}\\]/.test(file)) throw new BackendError('internal', `cannot pass path ${JSON.stringify(file)} to OpenOCD (braces or backslashes)`);
  return `{${file}}`;
}

function openocdPrelude(p: Extract<ProbeTarget, { kind: 'openocd' }>): string[] {
  const args = ['-f', p.interface, '-c', `adapter serial ${p.serialNumber}`, '-f', p.target];
  // After the target config, as an OpenOCD board file does: target files set their own adapter
  // speed and reset_config (stm32f4x.cfg sets `adapter speed 2000`), and ours must win.
  if (p.adapterSpeedKhz !== undefined) args.push('-c', `adapter speed ${p.adapterSpeedKhz}`);
  // srst_nogate: the adapter may drive nRST while the core is being examined.
  if (p.resetMethod === 'hardware') args.push('-c', 'reset_config srst_only srst_nogate');
  return args;
}

function probeRsSelector(p: Extract<ProbeTarget, { kind: 'probe-rs' }>): string[] {
  const args = ['--chip', p.chip, '--probe', `${p.vidPid}:${p.serialNumber}`];
  if (p.protocol) args.push('--protocol', p.protocol);
  return args;
}

/**
 * Flash and verify `elfPath`, leaving the core halted: OpenOCD's `program` without `reset` halts
 * the core first (its `reset init`) and leaves it so; probe-rs's `download` does not run the image.
 */
export function flashArgs(p: ProbeTarget, elfPath: string): string[] {
  if (p.kind === 'openocd') return [...openocdPrelude(p), '-c', `program ${tclPath(elfPath)} verify exit`];
  return ['download', ...probeRsSelector(p), '--verify', elfPath];
}

/** Release reset so the firmware starts from its reset vector. */
export function releaseResetArgs(p: ProbeTarget): string[] {
  if (p.kind === 'openocd') return [...openocdPrelude(p), '-c', 'init; reset run; shutdown'];
  return ['reset', ...probeRsSelector(p)];
}

/**
 * Stop the firmware and hold it (`Device.reset`). probe-rs's CLI has no "reset and halt" (its
 * `reset` only pulses reset), so there is none for probe-rs: ProbeDevice programs the image again.
 */
export function haltArgs(p: ProbeTarget): string[] | undefined {
  if (p.kind === 'openocd') return [...openocdPrelude(p), '-c', 'init; reset halt; shutdown'];
  return undefined;
}

/**
 * Serve GDB's remote protocol on 127.0.0.1:`port` with the core reset and halted (`Device.debug`),
 * with the same probe selection the backend flashes with. OpenOCD: its own TCL and telnet ports
 * off (two boards on one worker must not collide on 6666 and 4444), and on every target the
 * debugger's disconnect resumes the core and ends OpenOCD, so a detach lets the firmware run on
 * (OpenOCD 0.12 does nothing on detach by default) and the server never outlives its debugger.
 * A target with two cores (rp2040.cfg) serves core 0 on `port` and core 1 on `port` + 1.
 * probe-rs: `gdb --reset-halt`; its stub resumes the cores itself when GDB detaches.
 */
export function gdbServerArgs(p: ProbeTarget, port: number): string[] {
  if (p.kind === 'openocd') {
    return [
      ...openocdPrelude(p),
      '-c',
      'bindto 127.0.0.1',
      '-c',
      `gdb_port ${port}`,
      '-c',
      'tcl_port disabled',
      '-c',
      'telnet_port disabled',
      // `catch`: a debugger that vanishes while the core runs must still end OpenOCD.
      '-c',
      'foreach t [target names] { $t configure -event gdb-detach { catch resume; shutdown } }',
      '-c',
      'init; reset halt',
    ];
  }
  return ['gdb', ...probeRsSelector(p), '--gdb-connection-string', `127.0.0.1:${port}`, '--reset-halt'];
}

/** Output lines that mean "no such probe attached", across adapters. */
const probeNotFoundPatterns: RegExp[] = [
  /Error: open failed/, // ST-LINK (stlink.cfg)
  /unable to find a matching CMSIS-DAP device/,
  /No J-Link device found/,
  /unable to open ftdi device/i,
  /No connected probes were found/, // probe-rs
  /Probe was not found/i, // probe-rs, --probe selector not attached
];

const flashFailurePatterns: RegExp[] = [/\*\* Programming Failed \*\*/, /\*\* Verify Failed \*\*/, /Verification failed|verify failed/i];

/** Whether the tool's output says the probe is not attached. */
export function isProbeNotFound(output: string): boolean {
  return probeNotFoundPatterns.some((p) => p.test(output));
}

/**
 * The `BackendError` for a tool run that did not succeed, or undefined when it did. The message
 * names the step, the board, the exit status and quotes the tail of the tool's output.
 */
export function toolFailure(step: ProbeStep, boardId: string, result: ToolResult, timeoutMs: number): BackendError | undefined {
  const succeeded = result.stopped === undefined && result.exitCode === 0;
  if (succeeded && !(step === 'flash' && flashFailurePatterns.some((p) => p.test(result.output)))) return undefined;

  const tail = outputTail(result.output);
  const status =
    result.exitCode !== null ? `exit status ${result.exitCode}` : `killed by ${result.exitSignal ?? 'a signal'}`;
  const quoted = tail ? `; last output:\n${tail}` : '; it printed nothing';
  const details = { exitCode: result.exitCode ?? undefined, outputTail: tail };
  const where = `${step} on ${boardId} (${result.command})`;

  if (result.stopped === 'cancelled') return new BackendError('cancelled', `${where} cancelled`, details);
  if (result.stopped === 'timeout') {
    return new BackendError('timeout', `${where} did not finish within ${timeoutMs} ms and was killed${quoted}`, details);
  }
  if (isProbeNotFound(result.output)) {
    return new BackendError(
      'probe-not-found',
      `${where}: no probe found (${status}); check the USB cable and the bench file's probe serial number${quoted}`,
      details,
    );
  }
  if (result.exitCode === 127) {
    return new BackendError('unavailable', `${where}: the tool could not be started (${status})${quoted}`, details);
  }
  if (step === 'flash') return new BackendError('flash-failed', `${where}: flash or verify failed (${status})${quoted}`, details);
  if (step === 'GDB server') return new BackendError('unavailable', `${where}: the GDB server ended before a debugger could connect (${status})${quoted}`, details);
  return new BackendError('reset-failed', `${where}: the target did not ${step === 'halt' ? 'halt' : 'reset'} (${status})${quoted}`, details);
}
