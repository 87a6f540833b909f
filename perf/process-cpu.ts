import pg from 'pg';
import { procStatFields } from '../backends/process/process-identity.js';
import { pgConnection } from '../server/storage/postgres/pg-pool.js';

/**
 * Clock ticks per second of /proc/<pid>/stat's times: Linux reports them in USER_HZ, which is 100
 * on every architecture Node runs on (the kernel converts from its own HZ).
 */
const USER_HZ = 100;

/**
 * CPU milliseconds (user and system, all threads) process `pid` has used so far, from
 * /proc/<pid>/stat (10 ms resolution); undefined where there is no such file (not Linux, the
 * process is gone). For processes other than this one: the replicas and PostgreSQL's backends.
 */
export function processCpuMs(pid: number): number | undefined {
  const fields = procStatFields(pid);
  if (!fields) return undefined;
  // utime and stime are fields 14 and 15: fields[11] and fields[12] (fields[0] is field 3).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

/**
 * The CPU time PostgreSQL spends on one database: its backends' (the connections to it) CPU,
 * summed from /proc at `read()`, with the transactions it committed so far (`pg_stat_database`,
 * which backends update when they go idle, at most a second late). A backend that ended between two reads takes its last time with
 * it, so the difference of two reads counts it only up to the first: the service's pools keep
 * their connections while in use, so nearly nothing is lost. `close()` ends the watching
 * connection (itself left out of the sum).
 */
export async function databaseCpu(databaseUrl: string): Promise<{ read: () => Promise<{ cpuMs: number; transactions: number }>; close: () => Promise<void> }> {
  const client = new pg.Client(pgConnection(databaseUrl));
  await client.connect();
  const seenMs = new Map<number, number>();
  return {
    read: async () => {
      const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      for (const { pid } of rows) {
        const ms = processCpuMs(pid);
        if (ms !== undefined) seenMs.set(pid, ms);
      }
      let cpuMs = 0;
      for (const ms of seenMs.values()) cpuMs += ms;
      const stats = await client.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
      return { cpuMs, transactions: Number(stats.rows[0]?.xact_commit ?? Number.NaN) };
    },
    close: () => client.end(),
  };
}
