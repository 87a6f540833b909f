import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { packageVersion } from '../package-version.js';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { registerBenchTools } from './bench-tools.js';

/** An MCP server with the bench tools, acting through `client` (its base URL and agent token). */
export function benchMcpServer(client: BenchClient, options: { localFiles: boolean }): McpServer {
  const server = new McpServer(
    { name: 'hilbench', version: packageVersion() },
    { instructions: 'A hardware-in-the-loop bench: list_boards, then run_firmware for a one-shot run (with expect_text it answers, and frees the board, as soon as the text shows), or open_session / get_job / stream_job_uart / cancel_job / end_session for more. UART comes back as text, its head and tail when long (uart_cut_chars says how much was cut; max_chars asks for more). Times are the device clock unless a tool says otherwise.' },
  );
  registerBenchTools(server, client, options);
  return server;
}

/** `hilbench mcp`: the bench tools on stdin/stdout until stdin closes. */
export async function serveMcpOnStdio(client: BenchClient): Promise<void> {
  const server = benchMcpServer(client, { localFiles: true });
  await server.connect(new StdioServerTransport());
}

/**
 * `POST /mcp` on the bench service: MCP over streamable HTTP, stateless (one server per request),
 * with the caller's agent token (`authorization: Bearer hb_...`), which its tools use against the
 * bench API at `benchUrl()`. Without a bearer token: 401 in the service's error shape. GET and
 * DELETE (server-initiated streams, sessions) are 405: a stateless endpoint has neither.
 */
export function mcpHttpHandler(benchUrl: () => string): (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST') return json(405, { detail: 'Method Not Allowed: this MCP endpoint is stateless; POST JSON-RPC messages to it' }, { allow: 'POST' });
    // The scheme is case-insensitive (RFC 9110), as the service's bearer guard in front of this reads it:
    // a `bearer hb_...` it let in was refused here.
    const token = /^Bearer (\S+)$/i.exec((req.headers.authorization ?? '').trim())?.[1];
    if (!token) return json(401, { detail: 'Not authenticated: send "authorization: Bearer <agent token>" (POST /api/v1/agents/register)' }, { 'www-authenticate': 'Bearer' });
    const server = benchMcpServer(new BenchClient({ baseUrl: benchUrl(), token }), { localFiles: false });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };
}
