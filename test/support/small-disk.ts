import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A small disk of a test file's own: a tmpfs of `sizeBytes` mounted on a temporary directory, to
 * fill up and free again (issue 27: "a full disk is a fault too"). Mounting takes root (CI runs as
 * root): elsewhere `mountSmallDisk` answers why it could not, and the test file is skipped with that
 * reason, unless HILBENCH_REQUIRE_TOOLS=1 (CI), where the test file fails instead.
 */
export interface SmallDisk {
  readonly dir: string;
  /** Writes a file until the disk refuses more (ENOSPC); `free()` removes it. */
  fill(): void;
  free(): void;
  unmount(): void;
}

export function mountSmallDisk(sizeBytes: number): SmallDisk | { notMounted: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-small-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const why = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
    const reason = `mounting a ${sizeBytes}-byte tmpfs needs root (CI runs as root): ${why}`;
    if (process.env.HILBENCH_REQUIRE_TOOLS === '1') throw new Error(reason, { cause: err });
    return { notMounted: reason };
  }
  const filler = path.join(dir, 'filler');
  return {
    dir,
    fill: () => {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(fd);
      }
      // The last partial block too: byte by byte would be slow; 512-byte steps reach the end.
      const small = openSync(filler, 'a');
      try {
        for (;;) writeSync(small, Buffer.alloc(512));
      } catch (err) {
        if ((err as { code?: string }).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(small);
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount: () => {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
