import { createClock } from '@sinonjs/fake-timers';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { FileOutboxSmsSender, WebhookSmsSender, readSmsOutbox } from './sms-sender.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';

const server = setupServer();
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const gateway = 'https://sms.example/v1/send';

describe('WebhookSmsSender', () => {
  it('posts {to, text} as JSON with the configured headers', async () => {
    const seen: { body: unknown; key: string | null }[] = [];
    server.use(
      http.post(gateway, async ({ request }) => {
        seen.push({ body: await request.json(), key: request.headers.get('x-api-key') });
        return HttpResponse.json({ queued: true });
      }),
    );
    const sender = new WebhookSmsSender({ url: gateway, headers: { 'x-api-key': 'k1' }, fetch: (...a) => fetch(...a) });
    await sender.send({ to: '+41790000001', text: 'code 123456' });
    expect(seen).toEqual([{ body: { to: '+41790000001', text: 'code 123456' }, key: 'k1' }]);
  });

  it('throws with the status and the start of the answer when the gateway refuses', async () => {
    server.use(http.post(gateway, () => HttpResponse.text('quota exceeded', { status: 429 })));
    const sender = new WebhookSmsSender({ url: gateway, fetch: (...a) => fetch(...a) });
    await expect(sender.send({ to: '+41790000001', text: 'x' })).rejects.toThrow(/429: quota exceeded/);
  });

  it('gives up after timeoutMs on its clock', async () => {
    const fake = createClock(0);
    let arrived!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    server.use(
      http.post(gateway, async () => {
        arrived();
        await new Promise(() => undefined);
        return HttpResponse.json({});
      }),
    );
    const sender = new WebhookSmsSender({ url: gateway, fetch: (...a) => fetch(...a), timeoutMs: 5000, clock: clockFromFakeTimers(fake) });
    const sending = sender.send({ to: '+41790000001', text: 'x' });
    await reached;
    fake.tick(5000);
    await expect(sending).rejects.toThrow(/slower than 5000 ms/);
  });
});

describe('FileOutboxSmsSender', () => {
  it('appends one JSON line per message that readSmsOutbox returns in order', async () => {
    const dir = tempDataDir();
    try {
      const sender = new FileOutboxSmsSender(dir.dir, clockFromFakeTimers(createClock(Date.UTC(2026, 0, 1))));
      await sender.send({ to: '+1555', text: 'one' });
      await sender.send({ to: '+1556', text: 'two' });
      expect(readSmsOutbox(dir.dir)).toEqual([
        { at: '2026-01-01T00:00:00.000Z', to: '+1555', text: 'one' },
        { at: '2026-01-01T00:00:00.000Z', to: '+1556', text: 'two' },
      ]);
    } finally {
      dir.remove();
    }
  });

  it('writes the line within the call, even before the send is awaited (the relay answers login codes before their send settles)', async () => {
    const dir = tempDataDir();
    try {
      let release!: () => void;
      const sender = new FileOutboxSmsSender(dir.dir, clockFromFakeTimers(createClock(0)), () => new Promise<void>((resolve) => (release = resolve)));
      const sending = sender.send({ to: '+1555', text: 'at once' });
      expect(readSmsOutbox(dir.dir).map((m) => m.text)).toEqual(['at once']);
      release();
      await sending;
    } finally {
      dir.remove();
    }
  });

  it('resolves a send only once its line is synced, and fails it when the sync fails', async () => {
    const dir = tempDataDir();
    try {
      let release!: () => void;
      let syncStarted!: (lastLine: string) => void;
      const synced = new Promise<string>((resolve) => (syncStarted = resolve));
      const sender = new FileOutboxSmsSender(dir.dir, clockFromFakeTimers(createClock(0)), async () => {
        syncStarted(readSmsOutbox(dir.dir).at(-1)?.text ?? 'nothing');
        await new Promise<void>((resolve) => (release = resolve));
      });
      let settled = false;
      const sending = sender.send({ to: '+1555', text: 'held' }).then(() => (settled = true));
      // Waited for by the sync's own call, not by polling on wall time.
      expect(await synced).toBe('held');
      expect(settled).toBe(false);
      release();
      await sending;
      expect(settled).toBe(true);

      const failing = new FileOutboxSmsSender(dir.dir, clockFromFakeTimers(createClock(0)), async () => {
        throw new Error('EIO: i/o error, fdatasync');
      });
      await expect(failing.send({ to: '+1556', text: 'lost' })).rejects.toThrow(/EIO/);
    } finally {
      dir.remove();
    }
  });
});
