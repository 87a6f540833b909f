import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import type { BoardHealth } from '../../backends/backend.js';
import { clockFromFakeTimers } from '../../core/clock.js';
import { LinkedQuarantineStore } from './linked-quarantine-store.js';
import type { BoardHealthLink } from './worker-link.js';

const quarantined = (reason: string): BoardHealth => ({ consecutiveFailures: 3, lastFailure: reason, quarantine: { sinceMs: 1, reason } });

/** The server's board-health record as a worker's link reaches it, with an outage switch. */
class FakeServerHealth implements BoardHealthLink {
  readonly records = new Map<string, BoardHealth>();
  down = false;
  puts = 0;

  async getBoardHealth(boardId: string): Promise<BoardHealth> {
    if (this.down) throw new Error('connection refused');
    return this.records.get(boardId) ?? { consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined };
  }

  async putBoardHealth(boardId: string, health: BoardHealth): Promise<void> {
    if (this.down) throw new Error('connection refused');
    this.puts++;
    this.records.set(boardId, health);
  }
}

function setUp() {
  const fake = createClock(0);
  const server = new FakeServerHealth();
  const errors: string[] = [];
  const store = new LinkedQuarantineStore({ link: server, clock: clockFromFakeTimers(fake), logError: (m) => errors.push(m) });
  return { fake, server, store, errors };
}

describe('LinkedQuarantineStore', () => {
  it('reads the server’s record every time, so a release made on the server is seen at the next read', async () => {
    const { server, store } = setUp();
    await store.put('pico', quarantined('broken'));
    expect(server.records.get('pico')).toMatchObject({ quarantine: { reason: 'broken' } });
    server.records.set('pico', { consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
    expect((await store.get('pico')).quarantine).toBeUndefined();
  });

  it('answers the last known record while the server cannot be reached, and sends a write that failed again on its clock, newest first', async () => {
    const { fake, server, store, errors } = setUp();
    await store.put('pico', quarantined('first'));
    server.down = true;
    expect(await store.get('pico')).toMatchObject({ quarantine: { reason: 'first' } });
    await store.put('pico', quarantined('second'));
    await store.put('pico', quarantined('third'));
    expect(errors.some((e) => /writing the health of board pico to the server failed; sending it again in 1000 ms/.test(e))).toBe(true);
    // Not delivered yet: reads answer the newest write, not the server's older record.
    expect(await store.get('pico')).toMatchObject({ quarantine: { reason: 'third' } });
    server.down = false;
    const putsBefore = server.puts;
    await fake.tickAsync(1_000);
    expect(server.records.get('pico')).toMatchObject({ quarantine: { reason: 'third' } });
    // Superseded writes are never sent.
    expect(server.puts - putsBefore).toBe(1);
    await fake.tickAsync(60_000);
    expect(server.puts - putsBefore).toBe(1);
  });
});
