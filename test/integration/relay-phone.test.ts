import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers, foregroundClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { readSmsOutbox } from '../../server/relay/domain/sms-sender.js';
import { call, registerNode, relayForTests, relayLimits, startRelayServer, tempDataDir, type TestNode } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const { relay, dataDir } = relayForTests({ clock });
let phoneSeq = 1000;
const freshPhone = () => `+4179555${String(phoneSeq++).padStart(4, '0')}`;

/** The last code the outbox holds for `phone`. */
function lastCode(phone: string): string {
  const message = readSmsOutbox(dataDir).filter((m) => m.to === phone).at(-1);
  if (!message) throw new Error(`no SMS to ${phone} in the outbox`);
  return /code: (\d{6})/.exec(message.text)![1]!;
}
const sentTo = (phone: string) => readSmsOutbox(dataDir).filter((m) => m.to === phone).length;
/** Waits (bounded, real time: delivery is a background file write) until `phone` has received `count` messages in all. */
const received = (phone: string, count: number) =>
  waitUntil(foregroundClock, () => (sentTo(phone) >= count ? true : undefined), { timeoutMs: 10_000, describe: `SMS number ${count} to ${phone}`, lastSeen: () => `${sentTo(phone)} sent` });

async function withVerifiedPhone(): Promise<{ node: TestNode; phone: string }> {
  const node = await registerNode(relay, clock);
  const phone = freshPhone();
  expect((await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth })).status).toBe(200);
  const v = await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code: lastCode(phone) }, auth: node.auth });
  expect(v.status).toBe(200);
  fake.tick(relayLimits.codeMinIntervalSeconds * 1000);
  return { node, phone };
}

describe('phone verification', () => {
  it('sends a 6-digit code to the outbox; the right code verifies, and only once', async () => {
    const node = await registerNode(relay, clock);
    const phone = freshPhone();
    const start = await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone: phone.replace(/(\d{3})/, '$1 ') }, auth: node.auth });
    expect(start.body).toMatchObject({ status: 'code_sent', expires_in_seconds: relayLimits.codeTtlSeconds });
    const code = lastCode(phone);
    expect(code).toMatch(/^\d{6}$/);
    const ok = await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code }, auth: node.auth });
    expect(ok.status).toBe(200);
    expect(ok.body.verified).toBe(true);
    expect(String(ok.body.phone)).not.toContain(phone.slice(3, -3));
    const again = await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code }, auth: node.auth });
    expect(again.status).toBe(400);
  });

  it('refuses a malformed number with 422', async () => {
    const node = await registerNode(relay, clock);
    for (const phone of ['12345', '+0123456789', 'call me']) {
      const r = await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth });
      expect(r.status, phone).toBe(422);
    }
  });

  it('a code expires', async () => {
    const node = await registerNode(relay, clock);
    const phone = freshPhone();
    await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth });
    fake.tick(relayLimits.codeTtlSeconds * 1000 + 1);
    const r = await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code: lastCode(phone) }, auth: node.auth });
    expect(r.status).toBe(400);
  });

  it('a code dies after too many wrong attempts, even the right one', async () => {
    const node = await registerNode(relay, clock);
    const phone = freshPhone();
    await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth });
    const code = lastCode(phone);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < relayLimits.codeMaxAttempts; i++) {
      expect((await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code: wrong }, auth: node.auth })).status).toBe(400);
    }
    expect((await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code }, auth: node.auth })).status).toBe(400);
  });

  it('limits the send rate per number with 429 and Retry-After', async () => {
    const node = await registerNode(relay, clock);
    const phone = freshPhone();
    expect((await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth })).status).toBe(200);
    const soon = await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth });
    expect(soon.status).toBe(429);
    expect(Number(soon.headers.get('retry-after'))).toBe(relayLimits.codeMinIntervalSeconds);
    for (let i = 1; i < relayLimits.codeMaxPerHour; i++) {
      fake.tick(relayLimits.codeMinIntervalSeconds * 1000);
      expect((await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth })).status).toBe(200);
    }
    fake.tick(relayLimits.codeMinIntervalSeconds * 1000);
    const hourly = await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth });
    expect(hourly.status).toBe(429);
    expect(String(hourly.body.detail)).toMatch(/per hour/);
    fake.tick(3600_000);
    expect((await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth })).status).toBe(200);
  });

  it('proving a number moves it from the node that had it', async () => {
    const { node: first, phone } = await withVerifiedPhone();
    const second = await registerNode(relay, clock);
    await call(relay.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: second.auth });
    await call(relay.baseUrl, 'POST', '/me/phone/verify', { body: { phone, code: lastCode(phone) }, auth: second.auth });
    expect(((await call(relay.baseUrl, 'GET', '/me', { auth: first.auth })).body.node as { phone: unknown }).phone).toBeNull();
    expect(((await call(relay.baseUrl, 'GET', '/me', { auth: second.auth })).body.node as { phone: unknown }).phone).not.toBeNull();
  });
});

describe('login and recovery', () => {
  it('login answers identically for known and unknown numbers, and only the known one gets an SMS', async () => {
    const { node, phone } = await withVerifiedPhone();
    const before = sentTo(phone);
    const unknown = freshPhone();
    const a = await call(relay.baseUrl, 'POST', '/login', { body: { phone } });
    const b = await call(relay.baseUrl, 'POST', '/login', { body: { phone: unknown } });
    expect(a.status).toBe(b.status);
    expect(a.text).toBe(b.text);
    // The unknown number's request was answered after the known one's: by the time the known code arrives, a message to it would be queued too.
    await received(phone, before + 1);
    expect(sentTo(unknown)).toBe(0);
    const login = await call(relay.baseUrl, 'POST', '/login/verify', { body: { phone, code: lastCode(phone) } });
    expect(login.status).toBe(200);
    expect(login.body.authorization).toBe(node.auth);
    // A guess for the unknown number fails exactly like a wrong code.
    const guess = await call(relay.baseUrl, 'POST', '/login/verify', { body: { phone: unknown, code: '123456' } });
    const wrong = await call(relay.baseUrl, 'POST', '/login/verify', { body: { phone, code: '123456' } });
    expect(guess.status).toBe(400);
    expect(guess.text).toBe(wrong.text);
    // The rate limit is the same for both too.
    const a2 = await call(relay.baseUrl, 'POST', '/login', { body: { phone } });
    const b2 = await call(relay.baseUrl, 'POST', '/login', { body: { phone: unknown } });
    expect(a2.status).toBe(429);
    expect(b2.status).toBe(429);
    expect(a2.text).toBe(b2.text);
  });

  it('recovery revokes every earlier credential and every bot, and answers a new credential', async () => {
    const { node, phone } = await withVerifiedPhone();
    const before = sentTo(phone);
    const bot = await call(relay.baseUrl, 'POST', '/bots', { body: { name: 'old bot' }, auth: node.auth });
    const botAuth = String(bot.body.authorization);
    expect((await call(relay.baseUrl, 'GET', '/bots/me', { auth: botAuth })).status).toBe(200);
    const start = await call(relay.baseUrl, 'POST', '/recover/start', { body: { phone } });
    const unknownStart = await call(relay.baseUrl, 'POST', '/recover/start', { body: { phone: freshPhone() } });
    expect(start.text).toBe(unknownStart.text);
    await received(phone, before + 1);
    const finish = await call(relay.baseUrl, 'POST', '/recover/finish', { body: { phone, code: lastCode(phone) } });
    expect(finish.status).toBe(200);
    expect(finish.body).toMatchObject({ node_id: node.nodeId, revoked: { earlier_credentials: true, bots: 1 } });
    expect(finish.body.authorization).not.toBe(node.auth);
    expect((await call(relay.baseUrl, 'GET', '/me', { auth: node.auth })).status).toBe(401);
    expect((await call(relay.baseUrl, 'GET', '/bots/me', { auth: botAuth })).status).toBe(401);
    expect((await call(relay.baseUrl, 'GET', '/me', { auth: String(finish.body.authorization) })).status).toBe(200);
  });
});

describe('GET /lookup', () => {
  it('finds only numbers whose owner opted in; every other number answers the same empty list', async () => {
    const searcher = await registerNode(relay, clock);
    const { node, phone } = await withVerifiedPhone();
    const hidden = await call(relay.baseUrl, 'GET', `/lookup?phone=${encodeURIComponent(phone)}`, { auth: searcher.auth });
    const unknownPhone = freshPhone();
    const unknown = await call(relay.baseUrl, 'GET', `/lookup?phone=${encodeURIComponent(unknownPhone)}`, { auth: searcher.auth });
    expect(hidden.body).toEqual({ phone, nodes: [] });
    expect(unknown.body).toEqual({ phone: unknownPhone, nodes: [] });
    await call(relay.baseUrl, 'POST', '/directory', { body: { phone_discoverable: true }, auth: node.auth });
    const found = await call(relay.baseUrl, 'GET', `/lookup?phone=${encodeURIComponent(phone)}`, { auth: searcher.auth });
    expect(found.body).toEqual({ phone, nodes: [node.nodeId] });
  });

  it('limits lookups per caller per hour', async () => {
    const searcher = await registerNode(relay, clock);
    for (let i = 0; i < relayLimits.lookupsPerHour; i++) {
      expect((await call(relay.baseUrl, 'GET', `/lookup?phone=%2B41795550000`, { auth: searcher.auth })).status).toBe(200);
    }
    const limited = await call(relay.baseUrl, 'GET', `/lookup?phone=%2B41795550000`, { auth: searcher.auth });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).not.toBeNull();
  });
});

describe('a failing SMS gateway', () => {
  it('is a 502 for your own number, and invisible on login (same answer as for an unknown number)', async () => {
    const dir = tempDataDir();
    const logger = memoryLogger();
    const broken = await startRelayServer({
      clock,
      dataDir: dir.dir,
      logger,
      smsSender: { send: () => Promise.reject(new Error('gateway down')) },
    });
    try {
      const node = await registerNode(broken, clock);
      const phone = freshPhone();
      const own = await call(broken.baseUrl, 'POST', '/me/phone', { body: { phone }, auth: node.auth });
      expect(own.status).toBe(502);
      expect(logger.lines).toContain('error: relay: SMS delivery failed');
      // The failed attempt still counts against the number's send rate (a broken gateway is not hammered).
      expect((await call(broken.baseUrl, 'POST', '/login', { body: { phone } })).status).toBe(429);
      fake.tick(relayLimits.codeMinIntervalSeconds * 1000);
      const a = await call(broken.baseUrl, 'POST', '/login', { body: { phone } });
      const b = await call(broken.baseUrl, 'POST', '/login', { body: { phone: freshPhone() } });
      expect(a.status).toBe(200);
      expect(a.text).toBe(b.text);
    } finally {
      await broken.close();
      dir.remove();
    }
  });
});
