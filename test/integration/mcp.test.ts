import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { mcpHttpHandler } from '../../lib/mcp/mcp-server.js';
import type { RunningBenchServer } from '../../server/bench/start-bench-server.js';
import { startSystemClockBench } from '../support/system-clock-bench.js';
import { hilbenchCli } from '../support/compiled-cli.js';

/**
 * The bench as MCP tools, tested with the MCP SDK's own client: over streamable HTTP at /mcp on a
 * real bench service (pico on the simulator, the repository's hello firmware), and over stdio
 * from `hilbench mcp` in a child process.
 */

const root = path.resolve(import.meta.dirname, '../..');
const helloElf = path.join(root, 'firmware/examples/pico/hello.elf');
let server: RunningBenchServer;
let token: string;
let mcp: Client;

type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ type: string; text?: string }> };
const call = async (name: string, args: Record<string, unknown> = {}) => (await mcp.callTool({ name, arguments: args })) as ToolAnswer;

beforeAll(async () => {
  let url = '';
  server = await startSystemClockBench({ backend: 'sim', mcp: mcpHttpHandler(() => url) });
  url = server.url;
  token = (await new BenchClient({ baseUrl: url }).register('mcp-agent')).token;
  mcp = new Client({ name: 'hilbench-test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
}, 60_000);
afterAll(async () => {
  await mcp?.close();
  await server.close();
});

describe('MCP over streamable HTTP at /mcp', () => {
  it('lists the bench tools with their input schemas', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['cancel_job', 'end_session', 'get_job', 'heartbeat_session', 'list_boards', 'open_session', 'run_firmware', 'stream_job_uart']);
    expect(tools.find((t) => t.name === 'run_firmware')!.inputSchema.properties).toHaveProperty('elf_base64');
  });

  it('lists boards and runs firmware to its UART and outcome', async () => {
    const boards = (await call('list_boards')).structuredContent!.boards as Array<{ id: string; status: string }>;
    expect(boards.find((b) => b.id === 'pico')!.status).toBe('free');
    const elf = readFileSync(helloElf).toString('base64');
    // Passed once the text shows: the job is then cancelled, so the board is free at once (issue 31).
    const run = await call('run_firmware', { board: 'pico', elf_base64: elf, uart_seconds: 20, expect_text: 'tick 2' });
    expect(run.isError).toBeFalsy();
    expect(run.structuredContent).toMatchObject({ outcome: 'passed', state: 'failed', failure: { kind: 'cancelled' }, uart_cut_chars: 0 });
    expect(run.structuredContent!.uart_text).toContain('hilbench hello board=pico');
    const whole = await call('run_firmware', { board: 'pico', elf_base64: elf, uart_seconds: 0.5 });
    expect(whole.structuredContent).toMatchObject({ outcome: 'passed', state: 'done' });
    expect(whole.structuredContent!.uart_text).toContain('tick 4');
    // Text by default, cut to its head and tail with how much was cut.
    const cut = await call('get_job', { job_id: whole.structuredContent!.job_id, max_chars: 20 });
    expect(cut.structuredContent).toMatchObject({ state: 'done', uart_cut_chars: String(whole.structuredContent!.uart_text).length - 20 });
    expect(cut.structuredContent!.uart).not.toHaveProperty('base64');
    const wrong = await call('run_firmware', { board: 'pico', elf_base64: elf, uart_seconds: 0.2, expect_text: 'never printed' });
    expect(wrong.structuredContent).toMatchObject({ outcome: 'failed', state: 'done' });
  });

  it('opens, heartbeats and ends a session; reads a job and streams its UART', async () => {
    const opened = (await call('open_session', { board: 'uno', idle_seconds: 60 })).structuredContent!;
    expect(opened).toMatchObject({ board: 'uno', state: 'active' });
    expect((await call('heartbeat_session', { session_id: opened.session_id })).structuredContent).toMatchObject({ state: 'active' });
    const client = new BenchClient({ baseUrl: server.url, token });
    const job = await client.submitFlash('uno', new Uint8Array(readFileSync(path.join(root, 'firmware/examples/uno/hello.elf'))), { sessionId: String(opened.session_id), uartSeconds: 0.5 });
    const streamed = (await call('stream_job_uart', { job_id: job.job_id, until_text: 'tick 2' })).structuredContent!;
    expect(streamed.stopped).toBe('text-seen');
    expect(streamed.uart_text).toContain('hilbench hello board=uno');
    expect((await call('get_job', { job_id: job.job_id, wait_seconds: 30 })).structuredContent).toMatchObject({ state: 'done' });
    expect((await call('end_session', { session_id: opened.session_id })).structuredContent).toMatchObject({ state: 'ended' });
  });

  it('answers errors as tool errors in the service\'s words, and refuses server paths over HTTP', async () => {
    const missing = await call('get_job', { job_id: 'job_nope' });
    expect(missing.isError).toBe(true);
    expect(missing.content[0]!.text).toMatch(/404/);
    const byPath = await call('run_firmware', { board: 'pico', elf_path: '/etc/passwd' });
    expect(byPath.isError).toBe(true);
    expect(byPath.content[0]!.text).toMatch(/elf_path is only for a local hilbench mcp/);
  });

  it('needs the agent token, takes only POST, and is named by llms.txt and the home page', async () => {
    const anonymous = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ detail: expect.stringMatching(/Not authenticated/) });
    // A token no agent has is refused at the door like on every bearer route, not answered with tools that fail one by one.
    const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const unknown = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, authorization: 'Bearer hb_nobody' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(await unknown.json()).toEqual({ detail: 'Invalid token: no agent has this token' });
    // The scheme is case-insensitive on /mcp as on every bearer route (the guard let it in; the handler refused it).
    const lowerScheme = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, authorization: `bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(lowerScheme.status).toBe(200);
    expect(JSON.stringify(await lowerScheme.json())).toContain('list_boards');
    expect((await fetch(`${server.url}/mcp`)).status).toBe(405);
    const llms = await (await fetch(`${server.url}/llms.txt`)).text();
    expect(llms).toContain('## MCP');
    expect(llms).toContain('http://127.0.0.1/mcp');
    expect(await (await fetch(`${server.url}/`)).text()).toContain('id="mcp"');
  });

  // Regression: /openapi.json listed 200, 400, 401, 406, 415 and 500 only, while every MCP client's
  // notifications/initialized is answered 202 and a body over the SDK's 4 MiB 413.
  it('answers a notification 202 and a body over 4 MiB 413, both documented for POST /mcp', async () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    const notified = await fetch(`${server.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    expect([notified.status, await notified.text()]).toEqual([202, '']);
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(4 * 1024 * 1024) } });
    const tooLarge = await fetch(`${server.url}/mcp`, { method: 'POST', headers, body: huge });
    expect(tooLarge.status).toBe(413);
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, { post: { responses: Record<string, unknown> } }> };
    expect(Object.keys(doc.paths['/mcp']!.post.responses)).toEqual(expect.arrayContaining(['200', '202', '400', '401', '406', '413', '415', '500']));
  });
});

describe('hilbench mcp on stdio', () => {
  it('serves the same tools from a child process, with local ELF paths, on a bench of its own', async () => {
    const stdio = new Client({ name: 'hilbench-test', version: '1.0.0' });
    await stdio.connect(new StdioClientTransport({ command: process.execPath, args: [hilbenchCli, 'mcp'], env: { ...process.env, HILBENCH_URL: '' } as Record<string, string>, stderr: 'ignore' }));
    try {
      const run = (await stdio.callTool({ name: 'run_firmware', arguments: { board: 'pico', elf_path: helloElf, uart_seconds: 0.3, expect_text: 'tick 2' } })) as ToolAnswer;
      expect(run.structuredContent).toMatchObject({ outcome: 'passed' });
    } finally {
      await stdio.close();
    }
  }, 60_000);
});
