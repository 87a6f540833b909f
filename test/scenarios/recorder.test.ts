import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startInProcessTarget, type InProcessTarget } from '../../bin/run-command.js';
import { writeRecording } from '../../bin/record-command.js';
import { systemClock } from '../../core/clock.js';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { RelayClient } from '../../clients/relay/relay-client.js';
import { loadScenario } from '../../harness/scenario/load-scenario.js';
import { startRecordingProxy } from '../../harness/scenario/recording-proxy.js';
import { describeFailure, runScenario } from '../../harness/scenario/run-scenario.js';
import { scenariosDir } from './scenario-test-helper.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function inProcess(backend: 'mock' | 'sim' = 'mock'): Promise<InProcessTarget> {
  const t = await startInProcessTarget({ backend });
  cleanups.push(() => t.close());
  return t;
}

describe('hilbench record', () => {
  it('records a scripted agent through the proxy and the scenario replays green on a fresh server', async () => {
    const original = await inProcess();
    const proxy = await startRecordingProxy({ benchTarget: original.target.benchUrl as string, relayTarget: original.target.relayUrl as string, port: 0, clock: systemClock });
    cleanups.push(() => proxy.close());

    // The scripted agent: it only knows the proxy's addresses.
    const bench = new BenchClient({ baseUrl: proxy.url });
    const firmware = new Uint8Array(readFileSync(path.join(scenariosDir, '../firmware/examples/pico/hello.elf')));
    const agent = await bench.register('recorded-agent');
    const agentBench = bench.withToken(agent.token);
    const session = await agentBench.openSession('pico', { idleSeconds: 90, heartbeat: false });
    const job = await agentBench.submitFlash('pico', firmware, { uartSeconds: 0.3, sessionId: session.id });
    const done = await agentBench.waitForJob(job.job_id, { timeoutMs: 10_000 });
    expect(done.state).toBe('done');
    await agentBench.heartbeat(session.id);
    const busy = await bench.request('POST', '/api/v1/sessions', { token: agent.token, body: new URLSearchParams({ board: 'pico' }) });
    expect(busy.status).toBe(409);
    await session.end();
    const boards = await bench.request('GET', '/api/v1/boards');
    expect(boards.status).toBe(200);

    // ... and a relay client voting with two nodes.
    const relay = new RelayClient({ baseUrl: proxy.relayUrl as string, clock: original.target.clock });
    const a = (await relay.register({ name: 'a' })).node;
    const b = (await relay.register({ name: 'b' })).node;
    const item = await relay.postClaim(a, { kind: 'statement', title: 'recorded claim', body: '' });
    await relay.vote(a, { item: item.id, value: 'yes', phase: 'vote', slice: { t: 1, v: [b.nodeId] } });
    await relay.vote(b, { item: item.id, value: 'yes', phase: 'vote', slice: { t: 1, v: [a.nodeId] } });
    const bulletin = await relay.bulletin(item.id, a.nodeId);
    expect(bulletin.state).toBe('accepted');
    // The relay's own node: its id differs on the fresh relay, so the recording must capture it.
    const relayNode = (await relay.health()).node_id;
    expect((await relay.raw.bulletin(item.id, relayNode)).status).toBe(200);

    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-recorded-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const out = path.join(dir, 'session.yaml');
    const warnings = await writeRecording(proxy.exchanges(), out, 'recorded session');
    expect(warnings).toEqual([]);

    const yaml = readFileSync(out, 'utf8');
    // No secret and no server-assigned id survives; they are captured variables.
    for (const secret of [agent.token, a.authorization, b.authorization, session.id, job.job_id, agent.agent_id, a.nodeId, relayNode, item.id]) expect(yaml).not.toContain(secret);
    expect(yaml).toContain('${agent1.token}');
    expect(yaml).toContain('${session1.session_id}');
    expect(yaml).toContain('${node1.node_id}');
    const sha = createHash('sha256').update(firmware).digest('hex');
    expect(yaml).toContain(`firmware/${sha}.elf`);
    expect(existsSync(path.join(dir, 'firmware', `${sha}.elf`))).toBe(true);

    const scenario = loadScenario(out);
    expect(scenario.steps.map((s) => s.kind)).toEqual(
      expect.arrayContaining(['register', 'open-session', 'flash', 'wait-job', 'heartbeat', 'end-session', 'create-node', 'post-item', 'vote', 'expect-bulletin']),
    );
    // Polls collapsed: exactly one wait-job for one job.
    expect(scenario.steps.filter((s) => s.kind === 'wait-job')).toHaveLength(1);

    for (const backend of ['mock', 'sim'] as const) {
      const fresh = await inProcess(backend);
      const result = await runScenario(scenario, fresh.target);
      expect(result.status, describeFailure(result)).toBe('passed');
    }
  });

  it('keeps the gaps of a session as delays, so an expiry the agent saw replays', async () => {
    // Exchanges recorded by hand: the agent opened a session and came back after 95 s.
    const original = await inProcess();
    let nowMs = 1_000_000;
    const clock = { ...systemClock, nowMs: () => nowMs };
    const proxy = await startRecordingProxy({ benchTarget: original.target.benchUrl as string, port: 0, clock });
    cleanups.push(() => proxy.close());
    const bench = new BenchClient({ baseUrl: proxy.url });
    const agent = await bench.register('late');
    const session = await bench.withToken(agent.token).openSession('pico', { idleSeconds: 90, heartbeat: false });
    nowMs += 95_000;
    await original.target.advance(95_000);
    const late = await bench.request('POST', `/api/v1/sessions/${session.id}/heartbeat`, { token: agent.token });
    expect(late.status).toBe(409);

    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-recorded-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const out = path.join(dir, 'late.yaml');
    await writeRecording(proxy.exchanges(), out, 'late heartbeat');
    const scenario = loadScenario(out);
    expect(scenario.steps.map((s) => s.kind)).toEqual(['register', 'open-session', 'delay', 'heartbeat']);
    const fresh = await inProcess();
    const result = await runScenario(scenario, fresh.target);
    expect(result.status, describeFailure(result)).toBe('passed');
    expect(result.clockMs).toBe(95_000);
  });
});
