import { describe, expect, it } from 'vitest';
import { clientErrorOf } from './error-handler.js';

describe('clientErrorOf', () => {
  it('answers the 4xx status of an express / body-parser error, with its message only when exposed', () => {
    expect(clientErrorOf(Object.assign(new Error('request entity too large'), { status: 413, expose: true }))).toEqual({ status: 413, detail: 'request entity too large' });
    expect(clientErrorOf(Object.assign(new Error('secret internals'), { statusCode: 400, expose: false }))).toEqual({ status: 400, detail: 'Bad Request' });
  });

  it('maps the router\'s path decode error to 404 Not Found', () => {
    expect(clientErrorOf(Object.assign(new URIError("Failed to decode param '%ZZ'"), { status: 400 }))).toEqual({ status: 404, detail: 'Not Found' });
  });

  it('leaves 5xx, missing or odd statuses to the bug path', () => {
    expect(clientErrorOf(Object.assign(new Error('x'), { status: 500 }))).toBeUndefined();
    expect(clientErrorOf(new Error('x'))).toBeUndefined();
    expect(clientErrorOf(Object.assign(new Error('x'), { status: '404' }))).toBeUndefined();
    expect(clientErrorOf('a string')).toBeUndefined();
  });
});
