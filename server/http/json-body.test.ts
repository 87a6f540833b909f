import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { HttpError } from './http-error.js';
import { readJsonBody } from './json-body.js';

function request(body: string | Buffer[], headers: Record<string, string>, fail = false): IncomingMessage {
  const parts = typeof body === 'string' ? [Buffer.from(body)] : body;
  const stream = new Readable({
    read() {
      const next = parts.shift();
      if (next) this.push(next);
      else if (fail) this.destroy(new Error('aborted'));
      else this.push(null);
    },
  });
  return Object.assign(stream, { headers }) as unknown as IncomingMessage;
}

const json = { 'content-type': 'application/json' };

describe('readJsonBody', () => {
  it('parses a JSON body', async () => {
    expect(await readJsonBody(request('{"a":[1,2]}', json), { maxBodyBytes: 100 })).toEqual({ a: [1, 2] });
  });

  it('refuses a body not declared JSON with 415, one over the limit with 413, declared or not', async () => {
    await expect(readJsonBody(request('{}', { 'content-type': 'text/plain' }), { maxBodyBytes: 100 })).rejects.toMatchObject({ status: 415 });
    await expect(readJsonBody(request('{}', { ...json, 'content-length': '101' }), { maxBodyBytes: 100 })).rejects.toMatchObject({ status: 413 });
    await expect(readJsonBody(request([Buffer.alloc(60, 32), Buffer.alloc(60, 32)], json), { maxBodyBytes: 100 })).rejects.toMatchObject({ status: 413 });
  });

  it('answers bad JSON as FastAPI does (422 json_invalid) and a cut-off body with 400', async () => {
    const err = (await readJsonBody(request('{"a":', json), { maxBodyBytes: 100 }).catch((e: unknown) => e)) as HttpError;
    expect(err.status).toBe(422);
    expect(err.detail).toEqual([{ type: 'json_invalid', loc: ['body', 5], msg: 'JSON decode error', input: {}, ctx: { error: 'Unexpected end of JSON input' } }]);
    await expect(readJsonBody(request([Buffer.from('{"a"')], json, true), { maxBodyBytes: 100 })).rejects.toMatchObject({ status: 400 });
  });

  it('refuses bytes that are not UTF-8 with FastAPI\'s 400, instead of reading U+FFFD in their place', async () => {
    // "caf\xe9" in Latin-1: as text it would reach a firmware's serial input as "caf\xef\xbf\xbd".
    const latin1 = Buffer.from('{"text":"caf\xe9"}', 'latin1');
    const err = (await readJsonBody(request([latin1], json), { maxBodyBytes: 100 }).catch((e: unknown) => e)) as HttpError;
    expect([err.status, err.detail]).toEqual([400, 'There was an error parsing the body']);
    expect(await readJsonBody(request('{"text":"café"}', json), { maxBodyBytes: 100 })).toEqual({ text: 'café' });
  });

  it('reads past a UTF-8 byte-order mark, as FastAPI and the relay do', async () => {
    const withMark = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
    expect(await readJsonBody(request([withMark], json), { maxBodyBytes: 100 })).toEqual({ a: 1 });
  });
});
