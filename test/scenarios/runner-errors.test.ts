import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseScenario } from '../../harness/scenario/load-scenario.js';
import { runScenario } from '../../harness/scenario/run-scenario.js';
import { remoteTarget } from '../../harness/scenario/scenario-target.js';
import { scenariosDir } from './scenario-test-helper.js';

describe('an unexpected error names its cause', () => {
  it('"fetch failed" comes with the socket error code', async () => {
    const resetter = net.createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = resetter.address() as net.AddressInfo;
      const scenario = parseScenario('version: 1\nname: reset\nsteps:\n  - register: { label: x }\n', path.join(scenariosDir, 'x.yaml'));
      const r = await runScenario(scenario, remoteTarget({ benchUrl: `http://127.0.0.1:${port}`, boards: [] }));
      expect(r.status).toBe('failed');
      expect(r.failure?.message).toMatch(/^unexpected error: fetch failed \(ECONNRESET/);
    } finally {
      await new Promise((resolve) => resetter.close(resolve));
    }
  });
});
