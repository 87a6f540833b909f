import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchFile, parseBenchFile } from '../../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../../backends/probe/probe-backend.js';
import { systemClock } from '../../../core/clock.js';
import type { BenchServiceConfig } from '../../../server/bench/bench-service.js';
import { type FakeBehaviour, FAKE_PROBES_ENV, type FakeProbe, writeFakeProbes } from './fake-board.js';

/**
 * A whole stand-in bench for tests: per board a socat pty pair (host end for `serialport`, board
 * end for the fake firmware), the fake probe config, and a bench file pointing at both.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
export const fakeOpenocdPath = path.join(here, 'openocd');
export const fakeProbeRsPath = path.resolve(here, '../probe-rs/probe-rs');

export interface FakeBenchBoard {
  boardId: string;
  kind: 'openocd' | 'probe-rs';
  behaviour?: FakeBehaviour;
  /** Bench file `healthCheck` entry (ELF path absolute or relative to the fake bench directory). */
  healthCheck?: { elf: string; expect: string; withinSeconds?: number };
  timeouts?: { flashMs?: number; resetMs?: number; serialOpenMs?: number; killGraceMs?: number };
}

export class FakeBench {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'hilbench-fake-bench-'));
  private readonly socats = new Map<string, ChildProcess>();
  private readonly probes = new Map<string, FakeProbe>();
  private readonly unplugged = new Set<string>();
  readonly configPath = path.join(this.dir, 'probes.json');

  /** The environment the ProbeBackend passes to the tools (`toolEnv`). */
  get toolEnv(): Record<string, string> {
    return { [FAKE_PROBES_ENV]: this.configPath };
  }

  /**
   * A bench service on the probe backend over this fake bench's tools, with the admin token
   * `adminToken`. `bench` is read when the service starts (after a `beforeAll` has written it).
   */
  serviceConfig(bench: () => BenchFile, adminToken: string): Partial<BenchServiceConfig> {
    return {
      clock: systemClock,
      adminToken,
      backend: 'probe',
      backends: ({ clock, quarantineStore }) => ({
        probe: new ProbeBackend({ bench: bench(), clock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: this.toolEnv, quarantineStore }),
      }),
    };
  }

  /** Starts a pty pair per board and writes the probe config; resolves when the ptys exist. */
  async start(boards: FakeBenchBoard[], options: { quarantineAfterFailures?: number } = {}): Promise<BenchFile> {
    const entries: Record<string, unknown> = {};
    for (const b of boards) {
      const serialNumber = `FAKE-${b.boardId.toUpperCase()}`;
      this.probes.set(b.boardId, {
        serialNumber,
        uart: this.boardEnd(b.boardId),
        behaviour: b.behaviour ?? 'ok',
        stateDir: path.join(this.dir, `state-${b.boardId}`),
      });
      await this.startPty(b.boardId);
      entries[b.boardId] = {
        probe:
          b.kind === 'openocd'
            ? { kind: 'openocd', serialNumber, interface: 'interface/stlink.cfg' }
            : { kind: 'probe-rs', serialNumber, vidPid: '2e8a:000c' },
        serial: { path: this.hostEnd(b.boardId), baudRate: 115200 },
        timeouts: { flashMs: 20_000, resetMs: 20_000, killGraceMs: 500, ...b.timeouts },
        ...(b.healthCheck ? { healthCheck: b.healthCheck } : {}),
      };
    }
    this.writeConfig();
    return parseBenchFile({ version: 1, ...options, boards: entries }, path.join(this.dir, 'bench.yaml'));
  }

  hostEnd(boardId: string): string {
    return path.join(this.dir, `${boardId}-host`);
  }

  boardEnd(boardId: string): string {
    return path.join(this.dir, `${boardId}-board`);
  }

  /** Changes how a board's fake probe behaves from the next tool invocation on. */
  setBehaviour(boardId: string, behaviour: FakeBehaviour): void {
    this.probes.get(boardId)!.behaviour = behaviour;
    this.writeConfig();
  }

  /** Unplugs a probe: its serial number disappears from the config until `plugProbe`. */
  unplugProbe(boardId: string): void {
    this.unplugged.add(boardId);
    this.writeConfig();
  }

  plugProbe(boardId: string): void {
    this.unplugged.delete(boardId);
    this.writeConfig();
  }

  /** Every tool invocation on the board's probe, in order (`openocd ...`, `hang pid=N`). */
  invocations(boardId: string): string[] {
    const file = path.join(this.dir, `state-${boardId}`, 'invocations.log');
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
  }

  /** Pulls the USB serial cable: the pty pair goes away. */
  unplugSerial(boardId: string): void {
    this.socats.get(boardId)?.kill('SIGTERM');
    this.socats.delete(boardId);
  }

  /** Stops every socat and fake firmware, removes the directory. */
  async stop(): Promise<void> {
    for (const probe of this.probes.values()) {
      const pidFile = path.join(probe.stateDir, 'firmware.pid');
      if (existsSync(pidFile)) killQuietly(Number(readFileSync(pidFile, 'utf8')));
    }
    for (const socat of this.socats.values()) socat.kill('SIGTERM');
    this.socats.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private writeConfig() {
    writeFakeProbes(
      this.configPath,
      [...this.probes].filter(([id]) => !this.unplugged.has(id)).map(([, probe]) => probe),
    );
  }

  private async startPty(boardId: string) {
    const socat = spawn(
      'socat',
      ['-d', '-d', `pty,raw,echo=0,link=${this.hostEnd(boardId)}`, `pty,raw,echo=0,link=${this.boardEnd(boardId)}`],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.socats.set(boardId, socat);
    // socat logs "starting data transfer loop" once both ends exist.
    await new Promise<void>((resolve, reject) => {
      let log = '';
      socat.stderr!.setEncoding('utf8').on('data', (text: string) => {
        log += text;
        if (log.includes('starting data transfer loop')) resolve();
      });
      socat.on('error', reject);
      socat.on('exit', (code) => reject(new Error(`socat exited (${code}) before the pty pair was ready: ${log}`)));
    });
  }
}

function killQuietly(pid: number) {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone
  }
}
