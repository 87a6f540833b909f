import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { DEBUG_LEG_HOLD_MS } from '../../wire/worker/debug-schemas.js';
import { DEBUG_LEG_ANSWER_SLACK_MS, DebugLegRefused, dialDebugLeg } from './debug-leg.js';

let server: Server | undefined;
const held: Socket[] = [];
afterEach(async () => {
  for (const socket of held.splice(0)) socket.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A server whose upgrade listener answers each leg with `answer` (raw HTTP), and the upgrade requests it saw. */
async function serverAnswering(answer: (req: IncomingMessage, socket: Socket) => void): Promise<{ url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  server = createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    requests.push(req);
    held.push(socket);
    answer(req, socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const dial = (url: string, options: { signal?: AbortSignal; fake?: ReturnType<typeof createClock> } = {}) =>
  dialDebugLeg({ serverUrl: url, token: 'hbw_t', jobId: 'job 1', clock: clockFromFakeTimers(options.fake ?? createClock(0)), signal: options.signal ?? new AbortController().signal });

describe('dialDebugLeg', () => {
  it("asks for Upgrade: tcp with the worker's token on the job's path, and answers the 101's socket carrying the bytes that came with it", async () => {
    const { url, requests } = await serverAnswering((_req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: tcp\r\n\r\n+$g#67');
      socket.on('data', (data: Buffer) => socket.write(data));
    });
    const leg = await dial(url);
    expect(leg).toBeDefined();
    expect(requests.map((r) => [r.url, r.headers.upgrade, r.headers.authorization])).toEqual([['/api/v1/worker/jobs/job%201/debug', 'tcp', 'Bearer hbw_t']]);
    let seen = '';
    leg!.on('data', (data: Buffer) => (seen += data.toString('latin1')));
    leg!.write('+$00#00');
    await new Promise<void>((resolve) => leg!.on('data', () => seen.length >= 13 && resolve()));
    expect(seen).toBe('+$g#67+$00#00');
    leg!.destroy();
  });

  it('answers undefined on 204 (dial again), refuses on 404, and fails otherwise with the detail', async () => {
    const refusal = (status: string, detail: string) => {
      const body = JSON.stringify({ detail });
      return `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    };
    const answers = ['HTTP/1.1 204 No Content\r\n\r\n', refusal('404 Not Found', 'gone'), refusal('401 Unauthorized', 'who')];
    const { url } = await serverAnswering((_req, socket) => socket.end(answers.shift()!));
    expect(await dial(url)).toBeUndefined();
    const notHere = await dial(url).catch((err: unknown) => err);
    expect(notHere).toEqual(new DebugLegRefused('the bench server refused the debug leg of job job 1: 404 gone'));
    const unknown = await dial(url).catch((err: unknown) => err);
    expect(unknown).not.toBeInstanceOf(DebugLegRefused);
    expect((unknown as Error).message).toBe('the bench server refused the debug leg of job job 1: 401 who');
  });

  it("takes a path that does not answer within the server's hold and the slack for dead, and an abort for a stop", async () => {
    const { url } = await serverAnswering(() => undefined);
    const fake = createClock(0);
    const dead = dial(url, { fake }).catch((err: unknown) => err);
    await new Promise<void>((resolve) => server!.once('upgrade', () => resolve()));
    fake.tick(DEBUG_LEG_HOLD_MS + DEBUG_LEG_ANSWER_SLACK_MS);
    expect(((await dead) as Error).message).toMatch(/did not answer the debug stream's upgrade within 45000 ms$/);
    const stop = new AbortController();
    const stopped = dial(url, { signal: stop.signal });
    await new Promise<void>((resolve) => server!.once('upgrade', () => resolve()));
    stop.abort();
    expect(await stopped).toBeUndefined();
  });
});
