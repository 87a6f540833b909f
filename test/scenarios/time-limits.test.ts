import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseScenario } from '../../harness/scenario/load-scenario.js';
import { runScenario } from '../../harness/scenario/run-scenario.js';
import { remoteTarget } from '../../harness/scenario/scenario-target.js';
import { scenariosDir } from './scenario-test-helper.js';

// A server that accepts connections and never answers: without a limit a request step hangs forever.
const sockets = new Set<net.Socket>();
const silent = net.createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

const scenario = (body: string) => parseScenario(`version: 1\nname: limits\n${body}`, path.join(scenariosDir, 'limits.yaml'));

describe('request steps have a time limit', () => {
  it("a bench step's own timeout bounds its request", { timeout: 20_000 }, async () => {
    const r = await runScenario(scenario('steps:\n  - register: { label: x, timeout: 300ms }\n'), remoteTarget({ benchUrl: url, boards: [] }));
    expect(r.status).toBe('timeout');
    expect(r.failure?.message).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/api\/v1\/agents\/register: no complete answer within 300 ms/);
  });

  it('an http step without one takes the file default', { timeout: 20_000 }, async () => {
    const r = await runScenario(scenario('timeout: 250ms\nsteps:\n  - http: { method: GET, path: /api/v1/boards }\n'), remoteTarget({ benchUrl: url, boards: [] }));
    expect(r.status).toBe('timeout');
    expect(r.failure?.message).toMatch(/GET .*\/api\/v1\/boards: no complete answer within 250 ms/);
  });

  it('relay steps too', { timeout: 20_000 }, async () => {
    const r = await runScenario(scenario('steps:\n  - create-node: { as: a, timeout: 200ms }\n'), remoteTarget({ relayUrl: url, boards: [] }));
    expect(r.status).toBe('timeout');
    expect(r.failure?.message).toMatch(/no complete answer within 200 ms/);
  });
});

describe('a scenario has an overall time limit', () => {
  it('a step that never ends stops at time-limit with a report', { timeout: 20_000 }, async () => {
    const r = await runScenario(scenario('time-limit: 300ms\nsteps:\n  - delay: 1ms\n  - delay: 1ms\n'), remoteTarget({ boards: [] }), {
      handlers: { delay: () => new Promise<void>(() => {}) },
    });
    expect(r.status).toBe('timeout');
    expect(r.failure?.step).toEqual({ index: 0, kind: 'delay' });
    expect(r.failure?.message).toMatch(/time limit of 300 ms/);
    expect(r.steps.map((s) => s.status)).toEqual(['failed', 'not-run']);
  });

  it('refuses a time-limit that is not a duration', () => {
    expect(() => scenario('time-limit: soon\nsteps:\n  - delay: 1ms\n')).toThrow(/time-limit/);
  });
});
