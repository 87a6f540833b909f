import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { websocketHandshakeRefusal } from './websocket-handshake.js';

const good = { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
const request = (method: string, headers: Record<string, string | undefined>) => ({ method, headers }) as unknown as IncomingMessage;

describe('websocketHandshakeRefusal', () => {
  it('takes a handshake as RFC 6455 writes it, and version 8 as ws does', () => {
    expect(websocketHandshakeRefusal(request('GET', good))).toBeUndefined();
    expect(websocketHandshakeRefusal(request('GET', { ...good, upgrade: 'WebSocket', 'sec-websocket-version': '8' }))).toBeUndefined();
  });

  it('answers another method with 405 and Allow: GET', () => {
    const refusal = websocketHandshakeRefusal(request('POST', good));
    expect([refusal?.status, refusal?.detail, refusal?.headers]).toEqual([405, 'Method Not Allowed', { allow: 'GET' }]);
  });

  it('answers a version it does not speak, or none, with 426 naming 13', () => {
    for (const version of ['12', undefined]) {
      const refusal = websocketHandshakeRefusal(request('GET', { ...good, 'sec-websocket-version': version }));
      expect(refusal?.status).toBe(426);
      expect(refusal?.headers).toEqual({ upgrade: 'websocket', 'sec-websocket-version': '13, 8' });
      expect(refusal?.detail).toMatch(/send 13$/);
    }
  });

  it('answers a missing or short key with 400', () => {
    for (const key of [undefined, 'c2hvcnQ=', 'dGhlIHNhbXBsZSBub25jZQ']) {
      expect(websocketHandshakeRefusal(request('GET', { ...good, 'sec-websocket-key': key }))?.status).toBe(400);
    }
  });

  it('answers an upgrade to something else with 426 naming websocket', () => {
    expect(websocketHandshakeRefusal(request('GET', { ...good, upgrade: 'h2c' }))?.headers).toEqual({ upgrade: 'websocket' });
  });
});
