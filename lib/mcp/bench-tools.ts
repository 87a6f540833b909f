import { readFileSync } from 'node:fs';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { BenchClient } from '../bench-client.js';
import { BenchApiError, BenchTimeoutError } from '../bench-errors.js';

/**
 * The bench's MCP tools (docs/mcp.md): what an AI agent does with a bench, one call each, through
 * the public bench API with the agent's own token (`BenchClient`), so an MCP caller can do
 * exactly what an HTTP caller can and nothing more. Errors come back as tool errors with the
 * service's words, never as a broken connection.
 */
export interface BenchToolOptions {
  /** True for a local (stdio) server: `elf_path` may name a file on this host. Never over HTTP. */
  localFiles: boolean;
}

const text = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value as Record<string, unknown> });

async function answer(run: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return text(await run());
  } catch (err) {
    if (err instanceof BenchApiError || err instanceof BenchTimeoutError || err instanceof ToolInputError) {
      return { isError: true, content: [{ type: 'text', text: err.message }] };
    }
    throw err;
  }
}

class ToolInputError extends Error {}

export function registerBenchTools(server: McpServer, client: BenchClient, options: BenchToolOptions): void {
  const firmwareOf = (args: { elf_path?: string | undefined; elf_base64?: string | undefined }): Uint8Array => {
    if ((args.elf_path === undefined) === (args.elf_base64 === undefined)) throw new ToolInputError('give the ELF as elf_path or as elf_base64, one of them');
    if (args.elf_base64 !== undefined) return Uint8Array.from(Buffer.from(args.elf_base64, 'base64'));
    if (!options.localFiles) throw new ToolInputError('elf_path is only for a local hilbench mcp; over HTTP send elf_base64');
    return new Uint8Array(readFileSync(args.elf_path!));
  };

  server.registerTool(
    'list_boards',
    { title: 'List boards', description: 'Every board of the bench: id, name, MCU, status (free, leased, busy, offline) and why it is offline.', inputSchema: {} },
    () => answer(async () => ({ boards: (await client.boards()).map((b) => ({ id: b.id, name: b.name, mcu: b.mcu.id, status: b.status, offline_reason: b.offline_reason ?? null })) })),
  );

  server.registerTool(
    'run_firmware',
    {
      title: 'Run firmware',
      description:
        'Flash an ELF on a board, run it for uart_seconds of the device clock and answer the UART it printed and the outcome. With expect_text, passed means the UART contains it. Queues behind the board\'s current holder for up to wait_seconds.',
      inputSchema: {
        board: z.string().min(1).describe('a board id from list_boards'),
        elf_path: z.string().optional().describe('an ELF file on the host of a local hilbench mcp'),
        elf_base64: z.string().optional().describe('the ELF bytes, base64'),
        uart_seconds: z.number().positive().max(30).optional().describe('seconds of UART to capture (default 0.8)'),
        expect_text: z.string().min(1).optional().describe('passed only when the UART contains this'),
        wait_seconds: z.number().min(0).max(300).optional().describe('how long to wait for a busy board (default 60)'),
      },
    },
    (args) =>
      answer(async () => {
        const firmware = firmwareOf(args);
        await using session = await client.openSession(args.board, { waitSeconds: args.wait_seconds ?? 60 });
        const job = await session.flash(firmware, args.uart_seconds === undefined ? {} : { uartSeconds: args.uart_seconds });
        const uartText = job.uart?.text ?? '';
        const passed = job.state === 'done' && (args.expect_text === undefined || uartText.includes(args.expect_text));
        return { outcome: passed ? 'passed' : 'failed', job_id: job.job_id, state: job.state, uart_text: uartText, stop: job.stop, failure: job.failure };
      }),
  );

  server.registerTool(
    'open_session',
    {
      title: 'Open a session',
      description: 'Take a board exclusively. Keep it with heartbeat_session within idle_seconds; end it with end_session. wait_seconds queues behind the current holder.',
      inputSchema: {
        board: z.string().min(1),
        idle_seconds: z.number().int().positive().optional().describe('the lease frees itself after this long without a heartbeat (default 90)'),
        wait_seconds: z.number().min(0).max(300).optional(),
      },
    },
    (args) =>
      answer(async () => {
        const options = { heartbeat: false, ...(args.idle_seconds === undefined ? {} : { idleSeconds: args.idle_seconds }), ...(args.wait_seconds === undefined ? {} : { waitSeconds: args.wait_seconds }) };
        return (await client.openSession(args.board, options)).current;
      }),
  );

  server.registerTool(
    'heartbeat_session',
    { title: 'Heartbeat a session', description: 'Keep a session alive for another idle_seconds.', inputSchema: { session_id: z.string().min(1) } },
    (args) => answer(() => client.heartbeat(args.session_id)),
  );

  server.registerTool(
    'end_session',
    { title: 'End a session', description: 'Give the board back; its unfinished jobs are stopped.', inputSchema: { session_id: z.string().min(1) } },
    (args) => answer(() => client.endSession(args.session_id)),
  );

  server.registerTool(
    'get_job',
    {
      title: 'Get a job',
      description: 'A job with its state, UART and outcome. wait_seconds (at most 60) answers as soon as it is finished.',
      inputSchema: { job_id: z.string().min(1), wait_seconds: z.number().positive().max(60).optional() },
    },
    (args) => answer(() => client.getJob(args.job_id, args.wait_seconds === undefined ? {} : { waitSeconds: args.wait_seconds })),
  );

  server.registerTool(
    'stream_job_uart',
    {
      title: "Read a job's UART live",
      description:
        "Read a job's UART as it is captured (from the first byte) until until_text shows up, the job ends, or timeout_seconds pass; answers the text read and why it stopped. Each chunk is also sent as a logging message while it runs.",
      inputSchema: {
        job_id: z.string().min(1),
        until_text: z.string().min(1).optional(),
        timeout_seconds: z.number().positive().max(300).optional().describe('default 30'),
      },
    },
    (args, extra) =>
      answer(async () => {
        const timeoutMs = (args.timeout_seconds ?? 30) * 1000;
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutMs);
        const signal = AbortSignal.any([controller.signal, extra.signal]);
        let uartText = '';
        try {
          for await (const event of client.uart(args.job_id, { signal })) {
            if (event.kind === 'end') return { stopped: 'job-finished', state: event.job.state, uart_text: uartText };
            uartText += event.text;
            await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: `uart ${args.job_id}`, data: event.text } }).catch(() => undefined);
            if (args.until_text !== undefined && uartText.includes(args.until_text)) return { stopped: 'text-seen', uart_text: uartText };
          }
          return { stopped: 'stream-ended', uart_text: uartText };
        } catch (err) {
          if (controller.signal.aborted) return { stopped: 'timeout', uart_text: uartText };
          throw err;
        } finally {
          clearTimeout(timer);
        }
      }),
  );
}
