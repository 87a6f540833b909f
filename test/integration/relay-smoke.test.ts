import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay } from '../../server/relay/testing/relay-test-kit.js';

describe('relay smoke', () => {
  let relay: RunningRelay | undefined;
  const dirs: { remove(): void }[] = [];
  afterEach(async () => {
    await relay?.close();
    dirs.forEach((d) => d.remove());
  });
  it('registers, posts a claim, votes', async () => {
    const fake = createClock(Date.UTC(2026, 10, 20, 12));
    const clock = clockFromFakeTimers(fake);
    const data = tempDataDir();
    dirs.push(data);
    relay = await startRelayServer({ clock, dataDir: data.dir, log: () => {} });
    const h = await call(relay.baseUrl, 'GET', '/health');
    expect(h.status).toBe(200);
    const a = await registerNode(relay, clock, { name: 'alice' });
    const id = await postClaim(relay, a.auth, { kind: 'statement', title: 'x', body: 'y' });
    const v = voteBy(a, id, 'yes', 'vote', { t: 1, v: [relay.service.nodeId], i: [] }, clock);
    const r = await call(relay.baseUrl, 'POST', `/items/${id}/vote`, { body: v });
    console.log(r.status, JSON.stringify(r.body));
    const e = await call(relay.baseUrl, 'GET', '/events');
    console.log(JSON.stringify(e.body).slice(0, 1500));
    const o = await call(relay.baseUrl, 'GET', '/openapi.json');
    expect(o.status).toBe(200);
    const s = await call(relay.humanUrl, 'GET', '/AGENTS.md');
    expect(s.status).toBe(200);
  });
});
