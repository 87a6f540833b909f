import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpHttpHandler } from '../../lib/mcp/mcp-server.js';
import type { RunningBenchServer } from '../../server/bench/start-bench-server.js';
import { startSystemClockBench } from '../support/system-clock-bench.js';

/**
 * An agent given only the base URL runs firmware and reads its line within 4 requests after
 * reading llms.txt (issue 31): over HTTP (the example ELF, register, flash without a session,
 * read the job once it ended) and over MCP (register, initialize, initialized, run_firmware; the
 * MCP SDK's own probe for a server stream, answered 405, counted apart).
 * Every request the agent makes is counted; the pico runs on the simulator.
 */
const REQUEST_BUDGET = 4;
let server: RunningBenchServer;

beforeAll(async () => {
  let url = '';
  server = await startSystemClockBench({ backend: 'sim', mcp: mcpHttpHandler(() => url) });
  url = server.url;
}, 60_000);
afterAll(() => server?.close());

/** `fetch` that counts the requests made through it. */
function countingFetch(): { fetch: typeof fetch; made: string[] } {
  const made: string[] = [];
  return {
    made,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      made.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      return fetch(input, init);
    },
  };
}

describe('an agent with the base URL and llms.txt', () => {
  it('over HTTP: the example ELF, register, flash without a session, read the job: 4 requests', async () => {
    const llms = await (await fetch(`${server.url}/llms.txt`)).text();
    // What the agent reads: the shortest flow, with the example firmware to run.
    expect(llms).toContain('Shortest flow: three requests, no session needed.');
    expect(llms).toMatch(/`GET \S+\/examples\/\{board\}\/hello\.elf`/);

    const agent = countingFetch();
    const elf = await (await agent.fetch(`${server.url}/examples/pico/hello.elf`)).arrayBuffer();
    const { token } = (await (await agent.fetch(`${server.url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'blind' }) })).json()) as { token: string };
    const form = new FormData();
    form.set('board', 'pico');
    form.set('firmware', new Blob([elf]), 'hello.elf');
    const auth = { authorization: `Bearer ${token}` };
    const { job_id } = (await (await agent.fetch(`${server.url}/api/v1/jobs/flash`, { method: 'POST', headers: auth, body: form })).json()) as { job_id: string };
    const job = (await (await agent.fetch(`${server.url}/api/v1/jobs/${job_id}?wait=60&uart=text`, { headers: auth })).json()) as { state: string; uart: { text: string } };

    expect(job.state).toBe('done');
    expect(job.uart.text).toContain('hilbench hello board=pico');
    expect(agent.made).toEqual(['GET /examples/pico/hello.elf', 'POST /api/v1/agents/register', 'POST /api/v1/jobs/flash', `GET /api/v1/jobs/${job_id}`]);
    expect(agent.made.length).toBeLessThanOrEqual(REQUEST_BUDGET);
  });

  it('over MCP: register, initialize, initialized, run_firmware with the example firmware: 4 requests', async () => {
    const agent = countingFetch();
    const { token } = (await (await agent.fetch(`${server.url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'mcp' }) })).json()) as { token: string };
    const mcp = new Client({ name: 'blind-agent', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { fetch: agent.fetch, requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    try {
      const run = (await mcp.callTool({ name: 'run_firmware', arguments: { board: 'pico', example_firmware: true, expect_text: 'hilbench hello board=pico', uart_seconds: 5 } })) as unknown as {
        structuredContent: { outcome: string; uart_text: string; uart_cut_chars: number };
      };
      expect(run.structuredContent.outcome).toBe('passed');
      expect(run.structuredContent.uart_text).toContain('hilbench hello board=pico');
      // The MCP SDK's client also asks, by itself, for the optional server-to-client stream once
      // initialized (GET /mcp, which this stateless endpoint answers 405 at once): counted apart,
      // it is no request the agent chose and carries no work.
      const sdkStreamProbe = agent.made.filter((r) => r === 'GET /mcp');
      expect(sdkStreamProbe.length).toBeLessThanOrEqual(1);
      const chosen = agent.made.filter((r) => r !== 'GET /mcp');
      expect(chosen).toEqual(['POST /api/v1/agents/register', 'POST /mcp', 'POST /mcp', 'POST /mcp']);
      expect(chosen.length).toBeLessThanOrEqual(REQUEST_BUDGET);
    } finally {
      await mcp.close();
    }
  });
});
