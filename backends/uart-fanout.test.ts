import { describe, expect, it } from 'vitest';
import type { UartChunk } from './backend.js';
import { UartFanout } from './uart-fanout.js';

const chunk = (atNanos: number, text: string): UartChunk => ({ atNanos, bytes: new TextEncoder().encode(text) });

describe('UartFanout', () => {
  it('delivers every chunk to every listener, in subscription order', () => {
    const fanout = new UartFanout();
    const seen: string[] = [];
    fanout.subscribe((c) => seen.push(`a@${c.atNanos}`));
    fanout.subscribe((c) => seen.push(`b@${c.atNanos}`));
    fanout.emit(chunk(1, 'x'));
    fanout.emit(chunk(2, 'y'));
    expect(seen).toEqual(['a@1', 'b@1', 'a@2', 'b@2']);
  });

  it('passes the same chunk object through unchanged', () => {
    const fanout = new UartFanout();
    const sent = chunk(5, 'hi');
    let received: UartChunk | undefined;
    fanout.subscribe((c) => (received = c));
    fanout.emit(sent);
    expect(received).toBe(sent);
  });

  it('stops delivering to a listener once its unsubscribe is called, and keeps the others', () => {
    const fanout = new UartFanout();
    const a: number[] = [];
    const b: number[] = [];
    const offA = fanout.subscribe((c) => a.push(c.atNanos));
    fanout.subscribe((c) => b.push(c.atNanos));
    fanout.emit(chunk(1, 'x'));
    offA();
    offA(); // twice is harmless
    fanout.emit(chunk(2, 'y'));
    expect([a, b, fanout.size]).toEqual([[1], [1, 2], 1]);
  });

  it('lets a listener unsubscribe itself while being called', () => {
    const fanout = new UartFanout();
    const seen: string[] = [];
    const off = fanout.subscribe(() => {
      seen.push('once');
      off();
    });
    fanout.subscribe(() => seen.push('always'));
    fanout.emit(chunk(1, 'x'));
    fanout.emit(chunk(2, 'y'));
    expect(seen).toEqual(['once', 'always', 'always']);
  });

  it('counts the same listener once', () => {
    const fanout = new UartFanout();
    let calls = 0;
    const listener = () => calls++;
    fanout.subscribe(listener);
    fanout.subscribe(listener);
    fanout.emit(chunk(1, 'x'));
    expect(calls).toBe(1);
  });

  it('delivers nothing after clear (a closed device)', () => {
    const fanout = new UartFanout();
    let calls = 0;
    fanout.subscribe(() => calls++);
    fanout.clear();
    fanout.emit(chunk(1, 'x'));
    expect([calls, fanout.size]).toEqual([0, 0]);
  });
});
