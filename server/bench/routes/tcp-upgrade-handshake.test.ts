import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { NOT_A_TCP_UPGRADE, tcpUpgradeRefusal } from './tcp-upgrade-handshake.js';

const good = { upgrade: 'tcp', connection: 'Upgrade' };
const request = (method: string, headers: Record<string, string | undefined>) => ({ method, headers }) as unknown as IncomingMessage;

describe('tcpUpgradeRefusal', () => {
  it('takes a GET asking for Upgrade: tcp, in any case, among others', () => {
    expect(tcpUpgradeRefusal(request('GET', good))).toBeUndefined();
    expect(tcpUpgradeRefusal(request('GET', { ...good, upgrade: 'h2c, TCP' }))).toBeUndefined();
  });

  it('answers another method with 405 and Allow: GET', () => {
    const refusal = tcpUpgradeRefusal(request('POST', good));
    expect([refusal?.status, refusal?.detail, refusal?.headers]).toEqual([405, 'Method Not Allowed', { allow: 'GET' }]);
  });

  it('answers a WebSocket upgrade, or none, with 426 naming tcp', () => {
    for (const upgrade of ['websocket', undefined]) {
      const refusal = tcpUpgradeRefusal(request('GET', { ...good, upgrade }));
      expect([refusal?.status, refusal?.detail, refusal?.headers]).toEqual([426, NOT_A_TCP_UPGRADE, { upgrade: 'tcp', connection: 'Upgrade, close' }]);
    }
  });
});
