import { describe, expect, it } from 'vitest';
import { closestNames, editDistance } from './closest-names.js';

describe('closestNames', () => {
  const boards = ['pico', 'uno', 'netduinoplus2', 'mps2-an385', 'mps2-an505', 'stm32vldiscovery', 'lm3s6965evb', 'microbit'];

  it('counts edits', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });

  it('finds near misses and prefixes, nearest first, and nothing for a stranger', () => {
    expect(closestNames('netduinoplus', boards)).toEqual(['netduinoplus2']);
    expect(closestNames('netduino', boards)).toEqual(['netduinoplus2']);
    expect(closestNames('mps2-an386', boards)).toEqual(['mps2-an385', 'mps2-an505']);
    expect(closestNames('PICO', boards)).toEqual(['pico']);
    expect(closestNames('esp32', boards)).toEqual([]);
    expect(closestNames('x', boards)).toEqual([]);
  });
});
