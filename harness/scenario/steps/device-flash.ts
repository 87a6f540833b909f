import { createHash } from 'node:crypto';
import { z } from 'zod';
import { BackendError, type FirmwareImage } from '../../../backends/backend.js';
import { ElfError, parseElf } from '../../../core/elf.js';
import { defineStep } from '../define-step.js';
import { ScenarioError } from '../scenario-error.js';
import { boardField, text } from '../step-fields.js';

/** `device-flash`: opens a board on the target's backend and flashes it (no server). */
export const deviceFlashStep = defineStep({
  kind: 'device-flash',
  needs: 'device',
  usesBoard: true,
  schema: z
    .strictObject({ board: boardField, firmware: text.describe('relative to the scenario file') })
    .describe('opens the board on the target backend (closing a previous one), attaches UART capture and flashes; the core stays in reset until the next wait or delay'),
  async handler(ctx, b) {
    const backend = ctx.target.backend;
    if (!backend) throw new ScenarioError('unsupported', 'device-flash: the target has no backend');
    const boardId = ctx.board(b.board);
    const board = ctx.target.boards.find((x) => x.id === boardId);
    if (!board) throw new ScenarioError('failed', `device-flash: unknown board ${boardId} (known: ${ctx.target.boards.map((x) => x.id).join(', ')})`);
    const bytes = ctx.readFile(b.firmware);
    let image: FirmwareImage;
    try {
      image = { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), elf: parseElf(bytes) };
    } catch (err) {
      if (err instanceof ElfError) throw new ScenarioError('failed', `device-flash: ${b.firmware} is not a usable ELF: ${err.message}`);
      throw err;
    }
    await ctx.closeDevice();
    try {
      const device = await backend.open(board, ctx.signal ? { signal: ctx.signal } : {});
      const state = ctx.attachDevice(device);
      await state.device.flash(image, ctx.signal ? { signal: ctx.signal } : {});
    } catch (err) {
      if (err instanceof BackendError) throw new ScenarioError('failed', `device-flash on ${backend.name}: ${err.kind}: ${err.message}`, [], { cause: err });
      throw err;
    }
  },
});
