import { describe, expect, it } from 'vitest';
import { HttpError } from '../../http/http-error.js';
import { BENCH_ERROR_STATUS, httpErrorOfBench, toHttpError } from './bench-error-http.js';
import { BENCH_ERROR_CODES, BenchError } from '../domain/bench-errors.js';

describe('the bench error catalog and its HTTP mapping', () => {
  it('gives every code one error status, and maps no code the catalog lacks', () => {
    for (const code of BENCH_ERROR_CODES) {
      const status = BENCH_ERROR_STATUS[code];
      expect(status, code).toBeGreaterThanOrEqual(400);
      expect(status, code).toBeLessThan(600);
    }
    expect(Object.keys(BENCH_ERROR_STATUS).sort()).toEqual([...BENCH_ERROR_CODES].sort());
    expect(new Set(BENCH_ERROR_CODES).size).toBe(BENCH_ERROR_CODES.length);
  });

  it('answers every code with its status and the detail word for word', () => {
    for (const code of BENCH_ERROR_CODES) {
      const answer = httpErrorOfBench(new BenchError(code, `detail of ${code}`));
      expect(answer.status, code).toBe(BENCH_ERROR_STATUS[code]);
      expect(answer.detail, code).toBe(`detail of ${code}`);
    }
  });

  it('turns a retry time into Retry-After and each 401 into its WWW-Authenticate', () => {
    expect(httpErrorOfBench(new BenchError('board_leased', 'busy', { retryAfterSeconds: 7 })).headers).toEqual({ 'Retry-After': '7' });
    expect(httpErrorOfBench(new BenchError('not_authenticated', 'x')).headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
    expect(httpErrorOfBench(new BenchError('invalid_authorization_header', 'x')).headers).toEqual({
      'WWW-Authenticate': 'Bearer error="invalid_request"',
    });
    expect(httpErrorOfBench(new BenchError('invalid_token', 'x')).headers).toEqual({ 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  });

  it('answers a field error as the 422 pydantic writes for a failed validator', () => {
    const answer = httpErrorOfBench(new BenchError('firmware_invalid', 'not a loadable ELF: bad magic', { field: { name: 'firmware', input: 'a.elf' } }));
    expect(answer.status).toBe(422);
    expect(answer.detail).toEqual([
      { type: 'value_error', loc: ['body', 'firmware'], msg: 'Value error, not a loadable ELF: bad magic', input: 'a.elf', ctx: { error: {} } },
    ]);
  });

  it('passes every other error on untouched, for the error handler to judge', () => {
    const bug = new Error('bug');
    const http = new HttpError(413, 'too large');
    expect(toHttpError(bug)).toBe(bug);
    expect(toHttpError(http)).toBe(http);
  });
});
