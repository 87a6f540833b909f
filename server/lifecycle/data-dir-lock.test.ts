import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, lockDataDir, OWNER_FILE } from './data-dir-lock.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'data-dir-lock-'));
const children = new Set<ResultPromise>();
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.allSettled(children);
  rmSync(scratch, { recursive: true, force: true });
});

let made = 0;
const freshDir = () => mkdtempSync(path.join(scratch, `d${made++}-`));

/**
 * Another Node process trying the lock on `dir`: prints `locked <pid>` and holds it until killed,
 * or prints `refused <message>` and exits.
 */
function otherProcess(dir: string): { child: ResultPromise; outcome: Promise<string> } {
  const lockModule = new URL('./data-dir-lock.ts', import.meta.url).href;
  const script = `
    import { lockDataDir } from ${JSON.stringify(lockModule)};
    try { lockDataDir(${JSON.stringify(dir)}, 'bench service'); console.log('locked ' + process.pid); setInterval(() => {}, 60_000); }
    catch (err) { console.log('refused ' + err.message); }`;
  const child = execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { reject: false });
  children.add(child);
  const outcome = new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('\n')) resolve(seen.trim());
    });
    void child.then((r) => reject(new Error(`lock holder exited before answering: ${r.exitCode} ${r.stderr}`)));
  });
  return { child, outcome };
}

describe('lockDataDir', () => {
  it('refuses a second lock in the same process, naming the directory and the holder; release lets the next one in', () => {
    const dir = freshDir();
    const first = lockDataDir(dir, 'bench service');
    let refusal: unknown;
    try {
      lockDataDir(dir, 'bench service');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(DataDirInUseError);
    expect((refusal as Error).message).toContain(`data directory ${dir} is in use by another bench service in this same process (pid ${process.pid})`);
    expect((refusal as DataDirInUseError).holderPid).toBe(process.pid);
    first.release();
    first.release();
    // Closing then starting again on the same dir (every restart test) keeps working.
    const second = lockDataDir(dir, 'bench service');
    second.release();
  });

  it('refuses while another process holds it, with its pid and how to proceed', async () => {
    const dir = freshDir();
    const holder = otherProcess(dir);
    const answer = await holder.outcome;
    expect(answer).toMatch(/^locked \d+$/);
    const pid = Number(answer.split(' ')[1]);
    expect(() => lockDataDir(dir, 'relay service')).toThrow(
      new RegExp(`data directory ${dir} is in use by the bench service of hilbench process ${pid} \\(.*\\), so this relay service did not start.*Stop that process first \\(kill ${pid}\\)`),
    );
    expect(JSON.parse(readFileSync(path.join(dir, OWNER_FILE), 'utf8'))).toMatchObject({ pid, service: 'bench service' });
    holder.child.kill('SIGTERM');
    await holder.child;
  });

  it('is released by the kernel when its holder is killed with SIGKILL, so a restart is not blocked', async () => {
    const dir = freshDir();
    const holder = otherProcess(dir);
    expect(await holder.outcome).toMatch(/^locked/);
    holder.child.kill('SIGKILL');
    await holder.child;
    // Its pid file is still there (nobody removed it); the kernel lock is what decides.
    expect(statSync(path.join(dir, OWNER_FILE)).isFile()).toBe(true);
    const lock = lockDataDir(dir, 'bench service');
    expect(JSON.parse(readFileSync(path.join(dir, OWNER_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    lock.release();
  });

  it('lets exactly one of two simultaneous starts win', async () => {
    const dir = freshDir();
    const answers = await Promise.all([otherProcess(dir).outcome, otherProcess(dir).outcome]);
    expect(answers.filter((a) => a.startsWith('locked'))).toHaveLength(1);
    expect(answers.filter((a) => a.startsWith('refused'))).toHaveLength(1);
  });

  it('keeps the lock file owner-only', () => {
    const dir = freshDir();
    const lock = lockDataDir(dir, 'bench service');
    expect(statSync(path.join(dir, 'hilbench.lock')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, OWNER_FILE)).mode & 0o777).toBe(0o600);
    lock.release();
  });
});
