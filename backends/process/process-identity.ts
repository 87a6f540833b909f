import { readFileSync } from 'node:fs';

/**
 * A process named so that a reused pid does not count as the same process: its pid and its start
 * time (field 22 of /proc/<pid>/stat, clock ticks since boot). Linux only; elsewhere the start
 * time is unknown and nothing that needs it (reaping leftovers) acts.
 */
export interface ProcessIdentity {
  pid: number;
  startTicks: number;
}

/**
 * The fields of /proc/<pid>/stat after the command name, so that `[0]` is field 3 (state), or
 * undefined when there is no such process (or no /proc). The name (field 2) is in parentheses
 * and may itself hold spaces or ')': the fields start after the last ')'.
 */
export function procStatFields(pid: number): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** What /proc says about `pid`: its start time and state letter, or undefined when there is no such process. */
export function readProcessStat(pid: number): { startTicks: number; state: string } | undefined {
  const fields = procStatFields(pid);
  if (!fields) return undefined;
  // fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
  const startTicks = Number(fields[19]);
  const state = fields[0] ?? '';
  if (!Number.isSafeInteger(startTicks)) return undefined;
  return { startTicks, state };
}

/** The start time of `pid` in clock ticks since boot, or undefined (no such process, not Linux). */
export function processStartTicks(pid: number): number | undefined {
  return readProcessStat(pid)?.startTicks;
}

/**
 * Whether the process `identity` names still runs: the pid exists, is not a zombie (which has
 * already exited and only waits to be reaped) and started at the recorded time.
 */
export function isProcessAlive(identity: ProcessIdentity): boolean {
  const stat = readProcessStat(identity.pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X' && stat.startTicks === identity.startTicks;
}

let self: ProcessIdentity | undefined;

/** This Node process's identity (undefined start time off Linux). */
export function currentProcess(): ProcessIdentity | undefined {
  if (self) return self;
  const startTicks = processStartTicks(process.pid);
  if (startTicks === undefined) return undefined;
  self = { pid: process.pid, startTicks };
  return self;
}
