/** Levels of `--log-level`, apart from pino so the CLI's help lists them without loading it. */
export const logLevels = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];
