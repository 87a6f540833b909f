import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HttpError, parseOr422 } from '../../http/http-error.js';
import { RELAY_ERROR_STATUS, httpErrorOfRelay, relayToHttpError } from './relay-error-http.js';
import { RELAY_ERROR_CODES, RelayRefusal, invalidInputAt, parseOrRefuse } from '../domain/relay-errors.js';

describe('the relay error catalog and its HTTP mapping', () => {
  it('gives every code one error status, and maps no code the catalog lacks', () => {
    for (const code of RELAY_ERROR_CODES) {
      const status = RELAY_ERROR_STATUS[code];
      expect(status, code).toBeGreaterThanOrEqual(400);
      expect(status, code).toBeLessThan(600);
    }
    expect(Object.keys(RELAY_ERROR_STATUS).sort()).toEqual([...RELAY_ERROR_CODES].sort());
    expect(new Set(RELAY_ERROR_CODES).size).toBe(RELAY_ERROR_CODES.length);
  });

  it('answers every code but invalid input with its status and the detail word for word', () => {
    for (const code of RELAY_ERROR_CODES.filter((c) => c !== 'invalid_input')) {
      const answer = httpErrorOfRelay(new RelayRefusal(code, `detail of ${code}`));
      expect(answer.status, code).toBe(RELAY_ERROR_STATUS[code]);
      expect(answer.detail, code).toBe(`detail of ${code}`);
    }
  });

  it('adds the credential schemes to each 401, Retry-After to a retry time, and closes after an oversized upload', () => {
    const schemes = { 'WWW-Authenticate': 'Bearer realm="x-relay", Bot realm="x-relay"' };
    expect(httpErrorOfRelay(new RelayRefusal('credential_missing', 'x')).headers).toEqual(schemes);
    expect(httpErrorOfRelay(new RelayRefusal('credential_invalid', 'x')).headers).toEqual(schemes);
    expect(httpErrorOfRelay(new RelayRefusal('credential_wrong_kind', 'x')).headers).toEqual({});
    expect(httpErrorOfRelay(new RelayRefusal('code_rate_limited', 'x', { retryAfterSeconds: 7 })).headers).toEqual({ 'Retry-After': '7' });
    expect(httpErrorOfRelay(new RelayRefusal('file_too_large', 'x')).headers).toEqual({ Connection: 'close' });
  });

  it("answers invalid input as 422 entries in the translator's words, and says the same in its message", () => {
    const refusal = invalidInputAt(['body', 'phone'], [{ path: [], code: 'not_phone_number', input: '12' }]);
    const answer = httpErrorOfRelay(refusal);
    expect(answer.status).toBe(422);
    expect(answer.detail).toEqual([{ type: 'value_error', loc: ['body', 'phone'], msg: 'Value error, phone must be an E.164 number such as +41791234567', input: '12' }]);
    // A peer's refused event records this message: it reads as the HTTP layer's own did.
    expect(refusal.message).toBe(answer.message);
  });

  it("answers a use case's schema refusal as parseOr422 would, with the same entries", () => {
    const schema = z.strictObject({ title: z.string().max(3) });
    const input = { title: 'long', extra: 1 };
    const refusal = (() => {
      try {
        parseOrRefuse(schema, input, 'body');
      } catch (err) {
        return err;
      }
      throw new Error('parseOrRefuse accepted what the schema refuses');
    })();
    expect(refusal).toBeInstanceOf(RelayRefusal);
    const answer = httpErrorOfRelay(refusal as RelayRefusal);
    const expected = (() => {
      try {
        parseOr422(schema, input, 'body');
      } catch (err) {
        return err as HttpError;
      }
      throw new Error('parseOr422 accepted what the schema refuses');
    })();
    expect([answer.status, answer.detail, answer.headers]).toEqual([expected.status, expected.detail, expected.headers]);
    expect(parseOrRefuse(schema, { title: 'ok' }, 'body')).toEqual({ title: 'ok' });
  });

  it('passes every other error on untouched, for the error handler to judge', () => {
    const bug = new Error('bug');
    const http = new HttpError(413, 'too large');
    expect(relayToHttpError(bug)).toBe(bug);
    expect(relayToHttpError(http)).toBe(http);
  });
});
