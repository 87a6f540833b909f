import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyCompiledDist } from '../support/compiled-cli.js';

/**
 * The package as users get it, not as the source tree: `npm pack` of a copy of the package's files
 * (its `prepare`, the package's `build` script, making the copy's dist/), the tarball's contents,
 * then examples/vitest-firmware installed from the tarball in a temporary folder and its tests run
 * there: hilbench/vitest on the simulators and QEMU, the CLI and the library import; a failing
 * test's report carries its job's UART.
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
/** What `tsc -p tsconfig.build.json` emits, copied from the tests' own build (compiled-cli.ts). */
const emitted = path.join(work, 'emitted');

/**
 * The copy's `tsc`, first on the PATH of its npm scripts: the build script runs as it is (dist/
 * deleted, then "tsc", then the CLI made executable), but the compile is the one the tests' build
 * already made of the same tsconfig.build.json, copied in as tsc writes its files (mode 0644), not
 * a second whole tsc run of a minute or more (decision 0940). Any other arguments fail the build,
 * so a build script that stops matching the tests' build cannot pass here unnoticed.
 */
const tscStandIn = `#!/usr/bin/env node
const fs = process.getBuiltinModule('node:fs');
const path = process.getBuiltinModule('node:path');
const args = process.argv.slice(2).join(' ');
if (args !== '-p tsconfig.build.json') {
  console.error('pack.test.ts stands in for "tsc -p tsconfig.build.json" (what test/support/compiled-cli.ts builds), not "tsc ' + args + '"');
  process.exit(1);
}
fs.cpSync(${JSON.stringify(emitted)}, 'dist', { recursive: true });
for (const entry of fs.readdirSync('dist', { recursive: true, withFileTypes: true })) {
  if (entry.isFile()) fs.chmodSync(path.join(entry.parentPath, entry.name), 0o644);
}
`;

/**
 * better-sqlite3's native module as its prebuilt download holds it (`build/Release/better_sqlite3.node`
 * in a tar.gz named by version, Node ABI, platform and arch), from the repository's own install of
 * the same version: its install script, prebuild-install, finds it in the folder
 * `npm_config_better_sqlite3_local_prebuilds` names instead of failing to download it (no network
 * here) and compiling SQLite from source, minutes of one core (decision 0940). Should the example
 * resolve another version, the name no longer matches and the compile comes back: slower, the same test.
 */
async function betterSqlitePrebuilds(): Promise<string> {
  const installed = path.join(root, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { version: string };
  const prebuilds = path.join(work, 'prebuilds');
  mkdirSync(prebuilds, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await execa('tar', ['-czf', path.join(prebuilds, name), '-C', installed, 'build/Release/better_sqlite3.node']);
  return prebuilds;
}

beforeAll(async () => {
  await copyCompiledDist(emitted);
  const listed = await execa('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root });
  for (const file of listed.stdout.split('\0').filter((f) => f !== '' && existsSync(path.join(root, f)))) {
    cpSync(path.join(root, file), path.join(source, file), { recursive: true, verbatimSymlinks: true });
  }
  const tsc = path.join(source, 'node_modules', '.bin', 'tsc');
  mkdirSync(path.dirname(tsc), { recursive: true });
  writeFileSync(tsc, tscStandIn);
  chmodSync(tsc, 0o755);
  const packed = await execa('npm', ['pack', '--json', '--pack-destination', work], { cwd: source });
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = path.join(work, info!.filename);
  files = info!.files.map((f) => f.path);
}, 300_000);
// The example's node_modules are thousands of files: on a loaded machine their removal outlasted the default 30 s.
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
}, 300_000);

describe('the packed package', () => {
  it('holds no tests, fixtures or TypeScript sources, and every bin and exports path', () => {
    const forbidden = files.filter((f) => /(^|\/)test\/|\.test\.|(^|\/)fixtures?\/|(^|\/)perf\/|\.ts$/.test(f) && !f.endsWith('.d.ts'));
    expect(forbidden).toEqual([]);
    // Nor what the tests' builds leave in the repository's dist/ (a stamp, tsc's build info).
    expect(files.filter((f) => /^dist\/(.*\/)?\./.test(f))).toEqual([]);
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
    const prebuilds = await betterSqlitePrebuilds();
    await execa('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: example, env: { npm_config_better_sqlite3_local_prebuilds: prebuilds } });
    if (existsSync(path.join(example, 'node_modules/better-sqlite3/build/Release/obj.target'))) {
      console.warn(`pack.test.ts: better-sqlite3 was compiled from source in the example (no ${readdirSync(prebuilds).join(', ')} matched what prebuild-install looked for): minutes longer, same result`);
    }
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
