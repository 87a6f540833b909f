import { describe, expect, it } from 'vitest';
import { BenchError } from './bench-errors.js';
import { LongPollSlots } from './long-poll-slots.js';

describe('LongPollSlots', () => {
  it('gives each key at most max slots, refuses one more with too_many_long_polls and Retry-After 1, and frees a slot once per release', () => {
    const slots = new LongPollSlots();
    const first = slots.take('ag_1', 2, 'agent ag_1 holds 2');
    slots.take('ag_1', 2, 'agent ag_1 holds 2');
    // Another key is counted apart.
    slots.take('ag_2', 2, 'agent ag_2 holds 2');
    let refused: unknown;
    try {
      slots.take('ag_1', 2, 'agent ag_1 holds 2');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(BenchError);
    expect(refused).toMatchObject({ code: 'too_many_long_polls', detail: 'agent ag_1 holds 2: let one answer (or end it) before opening another', extra: { retryAfterSeconds: 1 } });
    first();
    first(); // a stream that ends and whose client goes too releases once
    expect(slots.held('ag_1')).toBe(1);
    slots.take('ag_1', 2, 'agent ag_1 holds 2');
    expect(() => slots.take('ag_1', 2, 'agent ag_1 holds 2')).toThrow(BenchError);
  });

  it('frees the slot of a poll that rejects', async () => {
    const slots = new LongPollSlots();
    await expect(slots.run('wk_1', 1, 'x', () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    expect(slots.held('wk_1')).toBe(0);
    expect(await slots.run('wk_1', 1, 'x', async () => 'answered')).toBe('answered');
  });
});
