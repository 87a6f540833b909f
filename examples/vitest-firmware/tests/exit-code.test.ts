import { expect, test } from 'hilbench/vitest';
import { exampleFirmware } from './firmware.js';

test('a firmware that exits reports its exit code', async ({ flash }) => {
  const job = await flash(exampleFirmware('pico', 'exit'), { uartSeconds: 2 });
  const finished = await job.result();
  expect(finished.stop).toMatchObject({ reason: 'exited' });
});
