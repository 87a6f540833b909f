import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { WORKER_TOKEN_PREFIX, looksLikeWorkerToken } from './worker-token-format.js';

describe('looksLikeWorkerToken', () => {
  it('takes a token shaped as POST /admin/workers makes them', () => {
    expect(looksLikeWorkerToken(`${WORKER_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`)).toBe(true);
  });

  it.each([
    ['an agent token', `hb_${randomBytes(32).toString('base64url')}`],
    ['the prefix alone', WORKER_TOKEN_PREFIX],
    ['a note printed beside the token', `created worker pi-1: ${WORKER_TOKEN_PREFIX}abc`],
    ['two lines', `${WORKER_TOKEN_PREFIX}abc\n${WORKER_TOKEN_PREFIX}def`],
    ['base64 rather than base64url', `${WORKER_TOKEN_PREFIX}ab+c/d=`],
  ])('refuses %s', (_, text) => {
    expect(looksLikeWorkerToken(text)).toBe(false);
  });
});
