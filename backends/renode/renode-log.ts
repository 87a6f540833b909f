/**
 * Renode console output, parsed. Formats (renode-infrastructure, src/Emulator/Main/Logging):
 * - Renode 1.16: `HH:mm:ss.ffff [LEVEL] source: message` (source absent for global messages);
 * - newer builds bracket the timestamp (`LogEntry.GetTimestampString`): `[HH:mm:ss.ffff] [LEVEL] ...`,
 *   `[<virtual time>] [LEVEL] ...` or `[host: HH:mm:ss.ffff | virt: <t>] [LEVEL] ...`;
 * - with thread ids on: `[LEVEL] (12) source: message`;
 * - monitor prompts: `(monitor) ` before a machine exists, then `(<machine name>) `.
 */
export const renodeLogLevels = ['NOISY', 'DEBUG', 'INFO', 'WARNING', 'ERROR'] as const;
export type RenodeLogLevel = (typeof renodeLogLevels)[number];

export interface RenodeLogLine {
  /** The timestamp as printed (host or virtual), without brackets; undefined when logs have none. */
  time: string | undefined;
  level: RenodeLogLevel;
  /** The emitting object (`sysbus`, `cpu`, `dut`, `dut/sysbus.usart2`), when named. */
  source: string | undefined;
  message: string;
}

const LOG_LINE =
  /^(?:(\d{2}:\d{2}:\d{2}\.\d{1,7})\s+|\[([^\]]+)\]\s+)?\[(NOISY|DEBUG|INFO|WARNING|ERROR)\](?:\s+\(\d+\))?\s+(.*)$/;
/** A source is a dotted/slashed identifier followed by ": " (messages may contain colons later). */
const SOURCE = /^([A-Za-z_][\w.\-/[\]]*): (.*)$/;

/** Parses one console line as a log line; undefined when it is monitor output or UART text. */
export function parseRenodeLogLine(line: string): RenodeLogLine | undefined {
  // Colours are stripped, in case --plain was not given.
  const plain = line.replace(/\x1b\[[0-9;]*m/g, '').trimEnd();
  const match = LOG_LINE.exec(plain);
  if (!match) return undefined;
  const time = match[1] ?? match[2];
  const level = match[3] as RenodeLogLevel;
  const rest = match[4] ?? '';
  const source = SOURCE.exec(rest);
  return source ? { time, level, source: source[1], message: source[2] ?? '' } : { time, level, source: undefined, message: rest };
}

/** The machine name of a prompt at the start of `line` (`(dut) ...` -> `dut`), if there is one. */
export function promptAt(line: string): { name: string; rest: string } | undefined {
  const match = /^\(([A-Za-z0-9_.-]+)\) (.*)$/s.exec(line);
  return match ? { name: match[1]!, rest: match[2] ?? '' } : undefined;
}

/** Monitor output that means the command failed (Monitor.cs PrintException and friends). */
export function isMonitorError(line: string): boolean {
  return /There was an error executing command|Could not find file|No such command or device|^Error( E\d+)?:/.test(line);
}

/** A log line that means the emulated CPU cannot go on (TranslationCPU / KVMCPU "CPU abort"). */
export function cpuAbortOf(line: RenodeLogLine): string | undefined {
  if (line.level !== 'ERROR') return undefined;
  return /CPU abort/.test(line.message) ? `${line.source ? `${line.source}: ` : ''}${line.message}` : undefined;
}
