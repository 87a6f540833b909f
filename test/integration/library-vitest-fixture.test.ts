import path from 'node:path';
import { describe } from 'vitest';
import { expect, test } from '../../lib/vitest.js';

/**
 * The `hilbench/vitest` fixture as a user's test file uses it, in this repository: no HILBENCH_URL,
 * so an in-process bench on the simulators; the repository's example firmware (banner, then
 * "tick n" every 100 ms of board time). The packed package runs the same in
 * examples/vitest-firmware (test/package/pack.test.ts).
 */
const firmware = (board: string) => path.resolve(import.meta.dirname, `../../firmware/examples/${board}/hello.elf`);

test('the default board prints its banner and ticks, on the device clock', async ({ flash, board }) => {
  expect(board.board).toBe(process.env.HILBENCH_BOARD ?? 'pico');
  const job = await flash(firmware(board.board), { uartSeconds: 1 });
  await expect(job).toPrint(`hilbench hello board=${board.board}`);
  await expect(job).toPrint(/tick 3/, { within: '1s' });
  // tick 5 comes at 0.5 s of simulated time: not within 0.2 s.
  await expect(job).not.toPrint(/tick 5/, { within: '200ms' });
  expect((await job.result()).state).toBe('done');
});

describe('on another board', () => {
  test.scoped({ boardId: 'uno' });

  test('a scoped board id picks the board', async ({ flash, board }) => {
    expect(board.board).toBe('uno');
    const job = await flash(firmware('uno'), { uartSeconds: 0.5 });
    await expect(job).toPrint('hilbench hello board=uno');
  });
});

test('a job that never prints the text fails the matcher with the UART it did print', async ({ flash, board }) => {
  const job = await flash(firmware(board.board), { uartSeconds: 0.3 });
  await expect(expect(job).toPrint('never printed')).rejects.toThrow(/ended done without printing it\nUART \(last lines\):\n[\s\S]*tick 2/);
});

// Issue 31: the verdict is out once toPrint matched; the job must not hold the board for the rest of its window.
let longJob: string | undefined;

test('a long job whose text was printed', async ({ flash, board }) => {
  const job = await flash(firmware(board.board), { uartSeconds: 30 });
  longJob = job.id;
  await expect(job).toPrint(/tick 2/);
});

test('is stopped when its test ends, keeping its UART, so the board is free at once', async ({ bench }) => {
  const job = await bench.getJob(longJob!);
  expect(job.state).toBe('failed');
  expect(job.failure).toEqual({ kind: 'cancelled', message: `job ${longJob} cancelled: its agent cancelled it: the test ended` });
  expect(job.uart?.text).toContain('tick 2');
});
