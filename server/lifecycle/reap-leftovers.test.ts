import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { registerChildLedger, type ChildRecord } from '../../backends/process/child-ledger.js';
import { EmulatorProcess } from '../../backends/process/emulator-process.js';
import { currentProcess, isProcessAlive, processStartTicks, type ProcessIdentity } from '../../backends/process/process-identity.js';
import { systemClock } from '../../core/clock.js';
import { PARTIAL_UPLOAD_PATTERN, reapLeftoverChildren, removeDeadScratchDirs, removePartialFiles } from './reap-leftovers.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'reap-leftovers-'));
const strays: number[] = [];
afterAll(() => {
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone: what the test wanted.
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

let made = 0;
const freshDir = () => mkdtempSync(path.join(scratch, `d${made++}-`));

/** A process that has exited: its pid names nobody (or someone else) now. */
function deadProcess(): ProcessIdentity {
  const done = spawnSync('sh', ['-c', 'exec cat /proc/self/stat']);
  const stat = done.stdout.toString();
  return { pid: done.pid ?? 0, startTicks: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) };
}

/** A stray `sleep`, detached as a crashed server's QEMU would be; `exited` settles when it dies. */
function stray(): ProcessIdentity & { exited: Promise<unknown> } {
  const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  strays.push(child.pid!);
  return { pid: child.pid!, startTicks: processStartTicks(child.pid!)!, exited };
}

function writeRecord(dir: string, record: ChildRecord): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${record.child.pid}-${record.child.startTicks}.json`);
  writeFileSync(file, JSON.stringify(record));
  return file;
}

describe('reapLeftoverChildren', () => {
  it('kills a recorded child whose owner is dead and forgets the record', async () => {
    const ledger = freshDir();
    const child = stray();
    const file = writeRecord(ledger, { child: { pid: child.pid, startTicks: child.startTicks }, owner: deadProcess(), command: 'qemu-system-arm -M mps2-an385' });
    expect(reapLeftoverChildren(ledger)).toEqual([{ pid: child.pid, command: 'qemu-system-arm -M mps2-an385' }]);
    await child.exited;
    expect(isProcessAlive(child)).toBe(false);
    expect(existsSync(file)).toBe(false);
  });

  it('never signals a pid whose start time differs from the record (a reused pid)', () => {
    const ledger = freshDir();
    const child = stray();
    const file = writeRecord(ledger, { child: { pid: child.pid, startTicks: child.startTicks - 1 }, owner: deadProcess(), command: 'qemu' });
    expect(reapLeftoverChildren(ledger)).toEqual([]);
    expect(isProcessAlive(child)).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('leaves the children of a live owner alone (another service in a live process)', () => {
    const ledger = freshDir();
    const child = stray();
    const file = writeRecord(ledger, { child: { pid: child.pid, startTicks: child.startTicks }, owner: currentProcess()!, command: 'qemu' });
    expect(reapLeftoverChildren(ledger)).toEqual([]);
    expect(isProcessAlive(child)).toBe(true);
    expect(existsSync(file)).toBe(true);
  });

  it('EmulatorProcess writes each child into a registered ledger while it runs and removes it when it exits', async () => {
    const ledger = freshDir();
    const forget = registerChildLedger(ledger);
    const p = new EmulatorProcess('sleep', ['30'], { clock: systemClock, killGraceMs: 1000 });
    try {
      const [name] = readdirSync(ledger);
      expect(name).toBe(`${p.pid}-${processStartTicks(p.pid!)}.json`);
      await p.stop();
      expect(readdirSync(ledger)).toEqual([]);
    } finally {
      forget();
    }
    const after = new EmulatorProcess('sleep', ['30'], { clock: systemClock, killGraceMs: 1000 });
    expect(readdirSync(ledger)).toEqual([]);
    await after.stop();
  });
});

describe('removeDeadScratchDirs', () => {
  it('removes the scratch folders of dead processes and keeps those of live ones', () => {
    const parent = freshDir();
    const me = currentProcess()!;
    const dead = deadProcess();
    const deadDir = path.join(parent, `hbq-${dead.pid}-${dead.startTicks}-aB3xYz`);
    const liveDir = path.join(parent, `hbq-${me.pid}-${me.startTicks}-Qw3rty`);
    const reusedPid = path.join(parent, `hbr-${me.pid}-${me.startTicks + 1}-Zx9cvb`);
    const unrelated = path.join(parent, 'hbq-Zx9cvb');
    for (const dir of [deadDir, liveDir, reusedPid, unrelated]) mkdirSync(dir);
    writeFileSync(path.join(deadDir, 'fw.elf'), 'x');
    expect(removeDeadScratchDirs([parent]).sort()).toEqual([deadDir, reusedPid].sort());
    expect(readdirSync(parent).sort()).toEqual([path.basename(liveDir), 'hbq-Zx9cvb'].sort());
  });
});

describe('removePartialFiles', () => {
  it("removes a crashed relay's partial uploads and nothing else", () => {
    const files = freshDir();
    const stored = 'a'.repeat(64);
    for (const name of ['tmp-0123456789abcdef', stored, 'tmp-notours']) writeFileSync(path.join(files, name), 'x');
    expect(removePartialFiles(files, PARTIAL_UPLOAD_PATTERN)).toEqual([path.join(files, 'tmp-0123456789abcdef')]);
    expect(readdirSync(files).sort()).toEqual([stored, 'tmp-notours'].sort());
    expect(removePartialFiles(path.join(files, 'missing'), PARTIAL_UPLOAD_PATTERN)).toEqual([]);
  });
});
