import { describe, expect, it } from 'vitest';
import type { Availability, Backend, BoardHealth } from '../../backends/backend.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { WorkerBoards } from './worker-boards.js';

// stm32f4-discovery lists renode before probe: a worker with only a real kit attached serves it on the probe.
const f4 = loadBoardCatalog().find((b) => b.id === 'stm32f4-discovery')!;

function renodeMissing(): Backend {
  return {
    name: 'renode',
    availability: async (): Promise<Availability> => ({ available: false, reason: 'renode is not installed' }),
    open: async () => {
      throw new Error('renode opened although unavailable');
    },
  };
}

/** A probe-like backend on the mock that keeps board health (quarantined: unavailable). */
function probeKeepingHealth() {
  const mock = new MockBackend();
  let quarantined = false;
  const health = async (): Promise<BoardHealth> => ({ consecutiveFailures: 0, lastFailure: undefined, quarantine: quarantined ? { sinceMs: 0, reason: 'quarantined' } : undefined });
  const backend: Backend = {
    name: 'probe',
    availability: async () => (quarantined ? { available: false, reason: 'quarantined' } : { available: true }),
    open: (board) => mock.open(board),
    health,
    release: async () => {
      quarantined = false;
    },
    healthCheck: async () => ({ passed: true, uartText: '', elapsedNanos: 0 }),
  };
  return { backend, quarantine: () => (quarantined = true) };
}

describe('WorkerBoards', () => {
  it('with auto, opens a board on the first backend that can run it then, and keeps its health on the backend that keeps health', async () => {
    const probe = probeKeepingHealth();
    const boards = new WorkerBoards([f4], { renode: renodeMissing(), probe: probe.backend }, 'auto');
    expect(boards.healthKeeper(f4)).toEqual({ name: 'probe', control: probe.backend });
    const target = boards.target('stm32f4-discovery')!;
    expect(target.healthKeeper).toBe(probe.backend);
    const device = await target.backend.open(f4);
    await device.close();
    expect(target.used?.()).toBe(probe.backend);
    expect(target.backend.name).toBe('probe');

    probe.quarantine();
    await expect(boards.target('stm32f4-discovery')!.backend.open(f4)).rejects.toMatchObject({
      kind: 'unavailable',
      message: 'board stm32f4-discovery is offline: no backend can run stm32f4-discovery here (renode: renode is not installed; probe: quarantined)',
    });
    // Quarantined, yet its health check still has a backend to run on.
    expect(boards.target('stm32f4-discovery')!.healthKeeper).toBe(probe.backend);
    expect(boards.target('pico')).toBeUndefined();
  });

  it('with one backend chosen, runs every board on it', async () => {
    const probe = probeKeepingHealth();
    const boards = new WorkerBoards([f4], { renode: renodeMissing(), probe: probe.backend }, 'renode');
    expect(boards.target('stm32f4-discovery')).toMatchObject({ backend: { name: 'renode' }, healthKeeper: undefined });
    expect(boards.healthKeeper(f4)).toBeUndefined();
  });
});
