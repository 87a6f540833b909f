import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessTarget, startInProcessTarget } from '../../bin/run-command.js';
import { loadScenario, parseScenario } from '../../harness/scenario/load-scenario.js';
import { describeFailure, runScenario } from '../../harness/scenario/run-scenario.js';
import { remoteTarget } from '../../harness/scenario/scenario-target.js';
import { scenariosDir } from './scenario-test-helper.js';

// The repository's files must be re-runnable against one long-lived server (a shared CI bench):
// every session a file opens is ended, and content-addressed relay items carry `${run.id}`.
let server: InProcessTarget;
beforeAll(async () => {
  server = await startInProcessTarget({ backend: 'mock' });
});
afterAll(async () => {
  await server.close();
});

const benchFiles = ['bench-auth-failures.yaml', 'bench-busy-board.yaml', 'bench-expired-session.yaml', 'bench-session-happy-path.yaml', 'bench-bad-firmware.yaml', 'bench-job-without-session.yaml'];
const relayFiles = ['relay-auth-failures.yaml', 'relay-vote-to-confirmation.yaml'];

describe('re-running repository scenarios on one server', () => {
  for (const name of [...benchFiles, ...relayFiles]) {
    it(`${name} passes twice in a row and leaves every board free`, { timeout: 60_000 }, async () => {
      const scenario = loadScenario(path.join(scenariosDir, name));
      for (const round of [1, 2]) {
        const result = await runScenario(scenario, server.target);
        expect(result.status, `round ${round}: ${describeFailure(result)}`).toBe('passed');
      }
      const boards = (await (await fetch(`${server.target.benchUrl}/api/v1/boards`)).json()) as { boards: Array<{ id: string; status: string }> };
      expect(boards.boards.filter((b) => b.status === 'leased').map((b) => b.id)).toEqual([]);
    });
  }

  it('${run.id} differs between runs and is the same within one', async () => {
    const scenario = parseScenario('version: 1\nname: ids\nsteps:\n  - http: { method: GET, path: "/api/v1/boards?r=${run.id}" }\n', path.join(scenariosDir, 'x.yaml'));
    const seen: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await runScenario(scenario, { ...server.target, fetch: (input, init) => (seen.push(String(input)), fetch(input, init)) });
      expect(r.status, describeFailure(r)).toBe('passed');
    }
    const ids = seen.map((u) => new URL(u).searchParams.get('r'));
    expect(ids[0]).toMatch(/^[0-9a-f]{12}$/);
    expect(ids[1]).not.toBe(ids[0]);
  });
});

describe('the backends filter against a remote bench', () => {
  it("looks at the remote server's backend for the board, not the local --backend", async () => {
    const scenario = loadScenario(path.join(scenariosDir, 'bench-uart-real-firmware.yaml'));
    // The server runs every board on mock; the local side has no backend at all.
    const remote = remoteTarget({ benchUrl: server.target.benchUrl as string, boards: server.target.boards });
    const result = await runScenario(scenario, remote);
    expect(result.status, describeFailure(result)).toBe('skipped');
    expect(result.skipReason).toMatch(/the bench's backend for pico is mock/);
  });
});
