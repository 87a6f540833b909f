import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

/**
 * A PostgreSQL cluster of one test file's own (initdb into a temporary directory, listening only
 * on a socket in that directory), for tests that stop and restart the database: restarting the
 * shared cluster would break every other test file running at the same time. Run as root (CI),
 * the cluster belongs to the `postgres` user (PostgreSQL refuses to run as root) and the test
 * connects as a superuser named after the user running the tests, as with the shared cluster.
 */
export interface PrivatePostgres {
  /** A URL of the cluster's `postgres` database (the tests' own user, over the private socket). */
  readonly url: string;
  /** Stops the server, ending every connection (fast shutdown: 57P01 to each session). */
  stop(): void;
  start(): void;
  /** Stops and starts again, as `pg_ctlcluster 15 main restart` does. */
  restart(): void;
  /** Stops the server and removes the cluster. */
  remove(): void;
}

/** The directory of PostgreSQL's server programs: Debian keeps them out of PATH, by major version. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions[0] !== undefined) return path.join(root, versions[0], 'bin');
  const onPath = (process.env.PATH ?? '').split(':').find((dir) => dir !== '' && existsSync(path.join(dir, 'initdb')));
  if (onPath !== undefined) return onPath;
  throw new Error('initdb not found in /usr/lib/postgresql/*/bin nor on PATH: install PostgreSQL (apt-get install -y postgresql)');
}

export function startPrivatePostgres(): PrivatePostgres {
  const bin = postgresBinDir();
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-private-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  const me = userInfo().username;
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (program: string, args: string[]) => {
    const command = asRoot ? 'runuser' : path.join(bin, program);
    const argv = asRoot ? ['-u', 'postgres', '--', path.join(bin, program), ...args] : args;
    try {
      execFileSync(command, argv, { stdio: 'pipe', timeout: 120_000 });
    } catch (err) {
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') : '';
      const stderr = String((err as { stderr?: Buffer }).stderr ?? '');
      throw new Error(`${program} ${args.join(' ')} failed: ${stderr.trim()}\n${log}`, { cause: err });
    }
  };
  // A superuser named as the tests' user, trusted on the private socket only (no TCP at all).
  run('initdb', ['-D', dataDir, '-U', me, '--auth=trust', '-N', '-E', 'UTF8', '--locale=C']);
  const options = `-k ${dir} -c listen_addresses='' -c fsync=off`;
  const ctl = (action: string, extra: string[] = []) => run('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '60', ...extra, action]);
  const start = () => ctl('start', ['-o', options]);
  start();
  return {
    url: `postgresql:///postgres?host=${encodeURIComponent(dir)}`,
    stop: () => ctl('stop', ['-m', 'fast']),
    start,
    restart: () => ctl('restart', ['-m', 'fast', '-o', options]),
    remove: () => {
      try {
        ctl('stop', ['-m', 'immediate']);
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
