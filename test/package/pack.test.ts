import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as users get it, not as the source tree: `npm pack` of a copy of the package's files
 * (which builds the copy's dist/ through `prepare`), the tarball's contents, then examples/vitest-firmware installed from the tarball in
 * a temporary folder and its tests run there: hilbench/vitest on the simulators and QEMU, the CLI
 * and the library import; a failing test's report carries its job's UART.
 */

const root = path.resolve(import.meta.dirname, '../..');
const work = mkdtempSync(path.join(tmpdir(), 'hilbench-pack-'));
const example = path.join(work, 'example');
let tarball = '';
let files: string[] = [];
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  exports: Record<string, string | Record<string, string>>;
};

/**
 * The package's files (tracked, and new ones git does not ignore) copied to a folder of this test's
 * own, where `npm pack` builds its dist/: the build empties dist/ first, and the repository's is
 * the compiled CLI other test files are running meanwhile (decision 0890).
 */
const source = path.join(work, 'package');

beforeAll(async () => {
  const listed = await execa('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root });
  for (const file of listed.stdout.split('\0').filter((f) => f !== '' && existsSync(path.join(root, f)))) {
    cpSync(path.join(root, file), path.join(source, file), { recursive: true, verbatimSymlinks: true });
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(source, 'node_modules'));
  const packed = await execa('npm', ['pack', '--json', '--pack-destination', work], { cwd: source });
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = path.join(work, info!.filename);
  files = info!.files.map((f) => f.path);
}, 300_000);
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('holds no tests, fixtures or TypeScript sources, and every bin and exports path', () => {
    const forbidden = files.filter((f) => /(^|\/)test\/|\.test\.|(^|\/)fixtures?\/|(^|\/)perf\/|\.ts$/.test(f) && !f.endsWith('.d.ts'));
    expect(forbidden).toEqual([]);
    const targets = [...Object.values(manifest.bin), ...Object.values(manifest.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e)))];
    for (const target of targets) expect(files, target).toContain(target.replace(/^\.\//, ''));
    expect(files).toContain('boards/pico.yaml');
    expect(files).toContain('firmware/examples/pico/hello.elf');
    // The build leaves the CLI executable: `npx hilbench` in a clone runs dist/bin/hilbench.js
    // itself, and after tsc rewrote it (mode 0644) it failed with "Permission denied".
    expect(statSync(path.join(source, manifest.bin.hilbench!)).mode & 0o111).toBe(0o111);
  });

  it('installs into a project and runs its hilbench/vitest tests, its CLI and its library import', async () => {
    cpSync(path.join(root, 'examples/vitest-firmware'), example, { recursive: true });
    cpSync(tarball, path.join(example, 'hilbench.tgz'));
    await execa('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: example });
    const tests = await execa('npx', ['vitest', 'run'], { cwd: example, reject: false, env: { CI: '1' } });
    expect(tests.exitCode, tests.stdout + tests.stderr).toBe(0);
    // Without the colours of vitest's summary.
    expect(tests.stdout.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(/Tests\s+4 passed/);
    expect((await execa('npx', ['hilbench', '--version'], { cwd: example })).stdout.trim()).toBe(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version);
    const imported = await execa('node', ['--input-type=module', '-e', "const { BenchClient } = await import('hilbench'); console.log(typeof BenchClient)"], { cwd: example });
    expect(imported.stdout.trim()).toBe('function');
  }, 900_000);

  it('a failing test carries the UART of its job in the report', async () => {
    writeFileSync(
      path.join(example, 'tests', 'fails.test.ts'),
      "import { expect, test } from 'hilbench/vitest';\nimport { exampleFirmware } from './firmware.js';\n" +
        "test('expects what is never printed', async ({ flash }) => {\n  const job = await flash(exampleFirmware('pico'), { uartSeconds: 0.3 });\n  await expect(job).toPrint('never printed');\n});\n",
    );
    const run = await execa('npx', ['vitest', 'run', 'tests/fails.test.ts', '--reporter=junit', '--outputFile=junit.xml'], { cwd: example, reject: false });
    expect(run.exitCode).toBe(1);
    const junit = readFileSync(path.join(example, 'junit.xml'), 'utf8');
    expect(junit).toMatch(/<system-err>[\s\S]*UART of job job_\S+ on pico \(done\):\nhilbench hello board=pico/);
  }, 300_000);
});
