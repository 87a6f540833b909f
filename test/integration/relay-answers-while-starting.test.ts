import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { createRelayService, startRelayServer } from '../../server/relay/relay-service.js';
import { tempDataDir } from '../support/relay-test-kit.js';

/**
 * The relay listens before it is built (its signed documents need the bound port): a request that
 * arrives while it is being built (the database opened, its migrations run) is answered 503 with
 * `Retry-After`; it was left unanswered for ever, node having no `request` listener yet.
 */
describe('startRelayServer while it starts', () => {
  it('answers 503 with Retry-After while the relay is being created, then serves', async () => {
    const data = tempDataDir();
    let duringStart: { status: number; retryAfter: string | null; body: unknown } | undefined;
    // The creation step, awaited: the request is sent while it runs.
    const relay = await startRelayServer(
      { clock: clockFromFakeTimers(createClock(Date.UTC(2026, 10, 29))), dataDir: data.dir, logger: memoryLogger() },
      {
        createService: async (config) => {
          const answer = await fetch(`${config.baseUrl}/health`);
          duringStart = { status: answer.status, retryAfter: answer.headers.get('retry-after'), body: await answer.json() };
          return createRelayService(config);
        },
      },
    );
    try {
      expect(duringStart).toEqual({ status: 503, retryAfter: '1', body: { detail: 'the relay is starting' } });
      expect((await fetch(`${relay.baseUrl}/health`)).status).toBe(200);
    } finally {
      await relay.close();
      data.remove();
    }
  });
});
