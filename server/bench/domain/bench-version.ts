/** The interface version this server implements (spec `bench-service.md`). */
export const BENCH_API_VERSION = '0.3.4';
