import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { createBackends } from '../harness/backend-registry.js';
import { resolveBoardBackends } from '../harness/board-resolution.js';

export type BoardsOptions = { boardsDir: string; backend: string; benchFile?: string; rp2040Bootrom?: string; qemu?: string; renode?: string; json?: boolean };

/** `hilbench boards`: the catalog and which backend can run each board here. Loaded only when it runs. */
export async function boardsCommand(opts: BoardsOptions): Promise<void> {
  const boards = loadBoardCatalog(opts.boardsDir);
  // The same backends `serve` builds from the same flags, so with the same --backend both commands agree.
  const backends = createBackends({
    clock: systemClock,
    boards,
    benchFile: opts.benchFile,
    rp2040BootromPath: opts.rp2040Bootrom,
    qemuBinary: opts.qemu,
    renodePath: opts.renode,
  });
  const resolved = await resolveBoardBackends(boards, backends, opts.backend as never);
  const rows = resolved.map((r) => ({
    id: r.board.id,
    name: r.board.name,
    mcu: r.board.mcu.id,
    architecture: r.board.mcu.architecture,
    backend: r.backendName,
    status: r.offlineReason ? 'offline' : 'online',
    reason: r.offlineReason ?? '',
  }));
  if (opts.json) {
    console.log(JSON.stringify(rows, null, 2));
    return;
  }
  const line = (id: string, mcu: string, backend: string, status: string) => `${id.padEnd(18)} ${mcu.padEnd(12)} ${backend.padEnd(7)} ${status}`;
  console.log(line('BOARD', 'MCU', 'BACKEND', 'STATUS (WHY OFFLINE)'));
  for (const r of rows) console.log(`${line(r.id, r.mcu, r.backend, r.status)}${r.reason ? `  (${r.reason})` : ''}`);
}
