import pino from 'pino';
import type { LogLevel } from './log-levels.js';
import type { LogFields, Logger } from './logger.js';

export { logLevels, type LogLevel } from './log-levels.js';

/**
 * Structured JSON logs, one object per line on stderr (`hilbench serve`, `hilbench worker`): time,
 * level, message and the line's fields (job id, board, request id); an error's cause with its
 * stack under `err`. Tokens and database passwords are never passed in.
 */
export function pinoLogger(options: { level: LogLevel; name: string; destination?: pino.DestinationStream }): Logger {
  const log = pino({ name: options.name, level: options.level, base: { pid: process.pid } }, options.destination ?? pino.destination(2));
  const clean = (fields: LogFields | undefined) => (fields ? Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) : {});
  return {
    debug: (message, fields) => log.debug(clean(fields), message),
    info: (message, fields) => log.info(clean(fields), message),
    warn: (message, fields) => log.warn(clean(fields), message),
    error: (message, cause, fields) => log.error({ ...clean(fields), ...(cause === undefined ? {} : { err: cause }) }, message),
  };
}
