import { describe, expect, it } from 'vitest';
import { StateSnapshot } from './state-snapshot.js';

describe('StateSnapshot', () => {
  it('puts fields, arrays (holes included), maps, sets and buffers back in place, on the same objects', () => {
    const inner = { count: 1, bytes: new Uint8Array([1, 2, 3]) };
    const sparse: (boolean | undefined)[] = Array(4);
    sparse[1] = true;
    const root = { inner, list: [inner, 2], sparse, seen: new Map([['a', 1]]), tags: new Set(['x']), label: 'as built' };
    const snapshot = new StateSnapshot();
    snapshot.take(root, { shared: new Set(), ownerRestored: new Set() });

    inner.count = 9;
    inner.bytes.fill(0);
    root.list.push(3);
    root.list[0] = { count: 5, bytes: new Uint8Array(1) };
    sparse[3] = true;
    root.seen.set('b', 2);
    root.tags.delete('x');
    root.label = 'used';
    snapshot.restore();

    expect(root.inner).toBe(inner);
    expect(inner).toEqual({ count: 1, bytes: new Uint8Array([1, 2, 3]) });
    expect(root.list).toEqual([inner, 2]);
    expect(root.list[0]).toBe(inner);
    expect(Object.keys(sparse)).toEqual(['1']);
    expect([...root.seen]).toEqual([['a', 1]]);
    expect([...root.tags]).toEqual(['x']);
    expect(root.label).toBe('as built');
  });

  it('leaves shared inputs and buffers their owner refills alone', () => {
    const board = { id: 'pico' };
    const flash = new Uint8Array(4).fill(0xff);
    const root = { board, flash };
    const snapshot = new StateSnapshot();
    snapshot.take(root, { shared: new Set([board]), ownerRestored: new Set([flash.buffer]) });
    board.id = 'changed elsewhere';
    flash[0] = 0;
    snapshot.restore();
    expect(board.id).toBe('changed elsewhere');
    expect(flash[0]).toBe(0);
  });

  it('refuses state it could not put back', () => {
    expect(() => new StateSnapshot().take({ pending: Promise.resolve() }, { shared: new Set(), ownerRestored: new Set() })).toThrow(/Promise/);
  });
});
