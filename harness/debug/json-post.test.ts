import http from 'node:http';
import { once } from 'node:events';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clockFromFakeTimers } from '../../core/clock.js';
import { JsonPostError, JsonPoster, JsonPostTimeout } from './json-post.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A server that hands each request to `handle`, and a poster to it on a fake clock. */
async function posterTo(handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const server = http.createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const fake = createClock(0);
  const poster = new JsonPoster(`http://127.0.0.1:${(server.address() as { port: number }).port}`, 'token', { clock: clockFromFakeTimers(fake), marginMs: 500 });
  cleanups.push(() => {
    poster.close();
    server.closeAllConnections();
    server.close();
  });
  return { server, fake, poster };
}

describe('JsonPoster', () => {
  it('gives a request up, naming its route and how long it waited, when no answer comes within its wait plus the margin', async () => {
    const { server, fake, poster } = await posterTo(() => undefined);
    const arrived = once(server, 'request');
    const posting = poster.post('/api/v1/worker/jobs/j1/debug/events', z.object({}), { wait_seconds: 1 }, { waitMs: 1_000 });
    const failed = posting.then(
      () => undefined,
      (err: unknown) => err,
    );
    await arrived;
    await fake.tickAsync(1_499);
    fake.tick(1);
    const err = await failed;
    expect(err).toBeInstanceOf(JsonPostTimeout);
    expect((err as Error).message).toBe('POST /api/v1/worker/jobs/j1/debug/events: no answer from the bench server after 1500 ms (its connection is dead, or the server is stuck)');
  });

  it('parses the answer with the schema, and refuses an answer that does not fit it', async () => {
    const { poster } = await posterTo((_req, res) => res.end(JSON.stringify({ ok: 'yes' })));
    await expect(poster.post('/x', z.object({ ok: z.string() }))).resolves.toEqual({ ok: 'yes' });
    await expect(poster.post('/x', z.object({ ok: z.literal(true) }))).rejects.toThrow(/answer to POST \/x is not what it should be/);
  });

  it("throws a refusal with its status and the server's detail", async () => {
    const { poster } = await posterTo((_req, res) => {
      res.statusCode = 409;
      res.end(JSON.stringify({ detail: 'job j1 has done' }));
    });
    await expect(poster.post('/x', z.object({}))).rejects.toEqual(new JsonPostError(409, 'job j1 has done'));
  });
});
