import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../core/clock.js';
import { EmulatorProcess } from '../../../backends/process/emulator-process.js';
import { freeTcpPort } from '../../../backends/renode/renode-backend.js';
import { RenodeCommandError, RenodeMonitor } from '../../../backends/renode/renode-monitor.js';
import { firmwarePath, loadFirmwareManifest } from '../../../firmware/examples/firmware-manifest.js';
import { writeLateUartQemu } from './late-uart-qemu.js';
import { renodeStandinPath } from './standin-path.js';
import { until } from '../../support/hilbench-processes.js';

/**
 * The stand-in's own protocol, checked directly (without the backend): what Renode 1.16 prints
 * and does for each command the backend uses, and its failure texts. docs/backends/renode.md
 * cites the Renode source of every message asserted here.
 */
const scratch = mkdtempSync(path.join(os.tmpdir(), 'standin-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const helloElf = firmwarePath(loadFirmwareManifest().firmware.find((f) => f.board === 'stm32f4-discovery' && f.program === 'hello')!);

async function standin(env: Record<string, string> = {}) {
  const child = new EmulatorProcess(renodeStandinPath, ['--disable-xwt', '--console', '--plain'], {
    clock: systemClock,
    killGraceMs: 1000,
    stdin: 'pipe',
    env: { ...process.env, ...env } as Record<string, string>,
  });
  const monitor = new RenodeMonitor(child, systemClock);
  await monitor.ready(20_000);
  return { child, monitor };
}

function tcpConnect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

function readUntil(socket: net.Socket, pattern: RegExp, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let seen = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`no ${pattern} in ${JSON.stringify(seen.toString('latin1'))}`)), timeoutMs);
    socket.on('data', (data: Buffer) => {
      seen = Buffer.concat([seen, data]);
      if (pattern.test(seen.toString('latin1'))) {
        clearTimeout(timer);
        resolve(seen);
      }
    });
  });
}

describe('Renode stand-in: command line', () => {
  it('prints the version like Renode and rejects unknown options', async () => {
    await expect(execa(renodeStandinPath, ['--version'])).resolves.toMatchObject({ stdout: 'Renode, version 1.16.1.0 (standin-hilbench)' });
    const bad = await execa(renodeStandinPath, ['--no-such-option'], { reject: false });
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toContain('Unknown option: --no-such-option');
  });

  it('says plainly that it has no telnet monitor', async () => {
    const result = await execa(renodeStandinPath, ['--disable-xwt', '-P', '0'], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('only --console is implemented');
  });

  it('runs -e commands at start-up, split at semicolons, and --hide-log hides log lines', async () => {
    const result = await execa(renodeStandinPath, ['--disable-xwt', '--console', '--plain', '--hide-log', '-e', 'mach create "dut"; version', '-e', 'quit'], {
      reject: false,
      timeout: 20_000,
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).not.toMatch(/\[INFO\]/);
    expect(result.stdout).toBe(
      ['Renode, version 1.16.1.0 (standin-hilbench)', '(monitor) mach create "dut"', '(dut) version', 'Renode, version 1.16.1.0 (standin-hilbench)', '(dut) quit', 'Renode is quitting'].join('\n'),
    );
  });

  it('writes its pid file', async () => {
    const pidFile = path.join(scratch, 'renode.pid');
    const child = new EmulatorProcess(renodeStandinPath, ['--console', '--plain', '--pid-file', pidFile], { clock: systemClock, killGraceMs: 1000, stdin: 'pipe' });
    await new RenodeMonitor(child, systemClock).ready(20_000);
    expect(Number(readFileSync(pidFile, 'utf8'))).toBe(child.pid);
    await child.stop();
  });
});

describe('Renode stand-in: monitor', () => {
  it('starts with the log line, the banner and (monitor), and switches the prompt to the machine', async () => {
    const { child, monitor } = await standin();
    try {
      expect(child.outputTail()).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{4} \[INFO\] Loaded monitor commands from: .*monitor\.py\nRenode, version 1\.16\.1/);
      expect(monitor.prompt).toBe('monitor');
      await expect(monitor.execute('mach create "dut"', 5000)).resolves.toEqual([expect.stringMatching(/\[INFO\] System bus created\.$/)]);
      expect(monitor.prompt).toBe('dut');
      await expect(monitor.execute('frobnicate', 5000)).rejects.toMatchObject({ output: ['No such command or device: frobnicate'] });
      await monitor.execute('quit', 5000).catch(() => undefined);
      await expect(child.exited).resolves.toMatchObject({ exitCode: 0 });
      expect(child.outputTail()).toContain('Renode is quitting');
    } finally {
      await child.stop();
    }
  });

  it('fails LoadPlatformDescription and LoadELF with Renode\'s messages', async () => {
    const garbage = path.join(scratch, 'not-an-elf.bin');
    writeFileSync(garbage, 'this is not an ELF file, just some bytes');
    const { child, monitor } = await standin();
    try {
      await monitor.execute('mach create "dut"', 5000);
      const missing = (await monitor.execute('machine LoadPlatformDescription @platforms/boards/nope.repl', 5000).catch((e: unknown) => e)) as RenodeCommandError;
      expect(missing.output).toEqual([
        "There was an error executing command 'machine LoadPlatformDescription @platforms/boards/nope.repl'",
        "Could not find file 'platforms/boards/nope.repl'.",
      ]);
      await monitor.execute('machine LoadPlatformDescription @platforms/boards/stm32f4_discovery-kit.repl', 5000);
      const bad = (await monitor.execute(`sysbus LoadELF @${garbage}`, 5000).catch((e: unknown) => e)) as RenodeCommandError;
      expect(bad.output[1]).toBe(`Error while loading ELF: Could not load ELF from path: ${garbage}`);
      const gone = (await monitor.execute('sysbus LoadELF @/nonexistent/fw.elf', 5000).catch((e: unknown) => e)) as RenodeCommandError;
      expect(gone.output[1]).toBe("Error while loading ELF: Could not find file '/nonexistent/fw.elf'.");
      const loaded = await monitor.execute(`sysbus LoadELF @${helloElf}`, 5000);
      expect(loaded[0]).toMatch(/\[INFO\] sysbus: Loading block of \d+ bytes length at 0x8000000\.$/);
    } finally {
      await child.stop();
    }
  });

  it('binds the UART terminal on every interface, queues output until a client connects, and speaks telnet when asked', async () => {
    const queued = path.join(mkdtempSync(path.join(scratch, 'queue-')), 'queued.bin');
    const { child, monitor } = await standin({ RENODE_STANDIN_QUEUE_TRACE: queued });
    const port = await freeTcpPort();
    const telnetPort = await freeTcpPort();
    try {
      for (const command of [
        'mach create "dut"',
        'machine LoadPlatformDescription @platforms/boards/stm32f4_discovery-kit.repl',
        `sysbus LoadELF @${helloElf}`,
        `emulation CreateServerSocketTerminal ${port} "term" false`,
        `emulation CreateServerSocketTerminal ${telnetPort} "telnet-term" true`,
        'connector Connect sysbus.usart2 term',
      ]) {
        await monitor.execute(command, 5000);
      }
      // 0.0.0.0, as SocketServerProvider binds IPAddress.Any: /proc/net/tcp lists it as 00000000:<port>.
      const listening = readFileSync('/proc/net/tcp', 'utf8');
      expect(listening).toContain(`00000000:${port.toString(16).toUpperCase().padStart(4, '0')}`);
      const again = (await monitor.execute(`emulation CreateServerSocketTerminal ${port} "t2" false`, 5000).catch((e: unknown) => e)) as RenodeCommandError;
      expect(again.output[1]).toBe(`Unable to create '0.0.0.0:${port}' socket:[AddressAlreadyInUse] Address already in use`);

      await expect(monitor.execute('start', 5000)).resolves.toEqual(['Starting emulation...', expect.stringMatching(/\[INFO\] dut: Machine started\.$/)]);
      // Connected once the stand-in has queued the first lines for want of a client (its trace
      // says so): what follows checks that queue, whatever the machine's load.
      const queuedText = () => (existsSync(queued) ? readFileSync(queued, 'latin1') : '');
      await until('the stand-in to queue "tick 1" with no client connected', () => queuedText().includes('tick 1\r\n'), 20_000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; queued at the end: ${JSON.stringify(queuedText())}`);
      });
      const socket = await tcpConnect(port);
      // Bytes from before the connection come first: nothing is lost.
      expect((await readUntil(socket, /tick 1\r\n/)).toString('latin1')).toMatch(/^hilbench hello board=stm32f4-discovery\r\ntick 1\r\n/);
      socket.destroy();

      const telnet = await tcpConnect(telnetPort);
      const negotiation = await readUntil(telnet, /\xfc"/);
      expect([...negotiation.subarray(0, 15)]).toEqual([255, 253, 0, 255, 253, 31, 255, 251, 1, 255, 251, 3, 255, 252, 34]);
      telnet.destroy();
    } finally {
      await child.stop();
    }
  });

  it('reports a locked-up core as Renode\'s CPU abort log line', async () => {
    const crashElf = firmwarePath(loadFirmwareManifest().firmware.find((f) => f.board === 'stm32f4-discovery' && f.program === 'crash')!);
    const { child, monitor } = await standin();
    try {
      for (const command of ['mach create "dut"', 'machine LoadPlatformDescription @platforms/boards/stm32f4_discovery-kit.repl', `sysbus LoadELF @${crashElf}`, 'start']) {
        await monitor.execute(command, 5000);
      }
      const abort = await new Promise<string>((resolve) => monitor.onLog((line) => line.level === 'ERROR' && resolve(`${line.source}: ${line.message}`)));
      expect(abort).toMatch(/^cpu: CPU abort \[PC=0x[0-9A-F]+\]: Lockup: can't escalate 3 to HardFault .*\.$/);
    } finally {
      await child.stop();
    }
  });

  // Renode logs the abort from the emulation thread and writes the UART through the socket
  // terminal; nothing orders the two, and the stand-in keeps it so: it logs the abort when its CPU
  // process exits, without waiting for that process's UART output (docs/backends/renode.md).
  it('logs the CPU abort without waiting for the UART bytes sent before it', async () => {
    const crashElf = firmwarePath(loadFirmwareManifest().firmware.find((f) => f.board === 'stm32f4-discovery' && f.program === 'crash')!);
    const { child, monitor } = await standin({ RENODE_STANDIN_QEMU: writeLateUartQemu(mkdtempSync(path.join(scratch, 'late-')), 0.3) });
    const port = await freeTcpPort();
    try {
      for (const command of [
        'mach create "dut"',
        'machine LoadPlatformDescription @platforms/boards/stm32f4_discovery-kit.repl',
        `sysbus LoadELF @${crashElf}`,
        `emulation CreateServerSocketTerminal ${port} "term" false`,
        'connector Connect sysbus.usart2 term',
      ]) {
        await monitor.execute(command, 5000);
      }
      const socket = await tcpConnect(port);
      const order: string[] = [];
      socket.once('data', () => order.push('uart'));
      const crashLine = readUntil(socket, /\r\n/);
      const abort = new Promise<void>((resolve) => monitor.onLog((line) => line.level === 'ERROR' && (order.push('abort'), resolve())));
      await monitor.execute('start', 5000);
      await abort;
      expect((await crashLine).toString('latin1')).toMatch(/^hilbench crash board=stm32f4-discovery: /);
      expect(order).toEqual(['abort', 'uart']);
      socket.destroy();
    } finally {
      await child.stop();
    }
  });

  it('warns that no reset macro is registered on machine Reset, like Renode\'s monitor', async () => {
    const { child, monitor } = await standin();
    try {
      await monitor.execute('mach create "dut"', 5000);
      await expect(monitor.execute('machine Reset', 5000)).resolves.toEqual([expect.stringMatching(/\[WARNING\] No action for reset - macro reset is not registered\.$/)]);
    } finally {
      await child.stop();
    }
  });
});
