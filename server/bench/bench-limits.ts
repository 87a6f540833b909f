/** The bench service's configurable limits (docs/bench-api.md, "Limits"). */
export interface BenchLimits {
  /** Largest firmware upload, bytes. A larger one is refused with 413 while streaming. */
  maxFirmwareBytes: number;
  /** Largest body of the urlencoded/multipart forms without files, bytes. */
  maxFormBodyBytes: number;
  /** Bounds of `idle_seconds`, seconds. */
  minIdleSeconds: number;
  maxIdleSeconds: number;
  /** Upper bound of `uart_seconds` (the lower bound is "greater than 0"), seconds. */
  maxUartSeconds: number;
  /** UART bytes kept per job; more is counted in `dropped_bytes`. */
  maxUartBytesPerJob: number;
  /** UART chunks kept with timestamps per job; more is counted in `chunks_omitted`. */
  maxUartChunksPerJob: number;
  /** Jobs waiting per board; one more is refused with 429. */
  maxQueuedJobsPerBoard: number;
  /** Longest agent label, characters. */
  maxLabelLength: number;
}

export const defaultBenchLimits: BenchLimits = {
  maxFirmwareBytes: 4 * 1024 * 1024,
  maxFormBodyBytes: 64 * 1024,
  minIdleSeconds: 10,
  maxIdleSeconds: 3600,
  maxUartSeconds: 30,
  maxUartBytesPerJob: 64 * 1024,
  maxUartChunksPerJob: 1024,
  maxQueuedJobsPerBoard: 8,
  maxLabelLength: 64,
};
