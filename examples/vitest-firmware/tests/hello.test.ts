import { describe } from 'vitest';
import { expect, test } from 'hilbench/vitest';
import { exampleFirmware } from './firmware.js';

// Each test holds its board for its duration; the session ends however the test ends.
test('the Pico prints its banner, then ticks every 100 ms of board time', async ({ flash }) => {
  const job = await flash(exampleFirmware('pico'), { uartSeconds: 1 });
  await expect(job).toPrint('hilbench hello board=pico');
  await expect(job).toPrint(/tick 3/, { within: '1s' });
  expect((await job.result()).state).toBe('done');
});

describe('Arduino Uno (avr8js)', () => {
  test.scoped({ boardId: 'uno' });
  test('prints its banner', async ({ flash }) => {
    await expect(await flash(exampleFirmware('uno'), { uartSeconds: 0.5 })).toPrint('hilbench hello board=uno');
  });
});

describe('Netduino Plus 2 (QEMU)', () => {
  test.scoped({ boardId: 'netduinoplus2' });
  test('prints its banner on the emulator', async ({ flash }) => {
    await expect(await flash(exampleFirmware('netduinoplus2'), { uartSeconds: 2 })).toPrint('hilbench hello board=netduinoplus2', { timeoutMs: 60_000 });
  });
});
