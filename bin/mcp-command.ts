import { BenchClient } from '../clients/bench/bench-client.js';
import { startInProcessBench } from '../lib/in-process-bench.js';
import { serveMcpOnStdio } from '../lib/mcp/mcp-server.js';

/**
 * `hilbench mcp`: the bench tools on stdio for a local AI agent. stdout carries only MCP
 * messages; anything else goes to stderr. Stops (and stops its in-process bench) when stdin ends.
 */
export async function mcpCommand(opts: { server?: string; token?: string }): Promise<void> {
  // An empty HILBENCH_URL or HILBENCH_TOKEN means none.
  const server = opts.server || undefined;
  const local = server ? undefined : await startInProcessBench();
  const anonymous = new BenchClient({ baseUrl: server ?? local!.url });
  const token = opts.token || (await anonymous.register('mcp')).token;
  await serveMcpOnStdio(anonymous.withToken(token));
  const stop = async () => {
    await local?.close();
    process.exit(0);
  };
  process.stdin.on('end', () => void stop());
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
