import { readFileSync } from 'node:fs';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { BenchClient } from '../../clients/bench/bench-client.js';
import { BenchApiError, BenchTimeoutError } from '../../clients/bench/bench-errors.js';
import type { Job } from '../../clients/bench/bench-types.js';
import { headAndTail } from '../../server/bench/views/job-text-view.js';
import { MAX_TEXT_CHARS } from '../../wire/bench/job-request-schemas.js';

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

/**
 * Characters of UART a tool answers by default: its head and tail, and how many were cut
 * (issue 31): a chatty firmware's 64 KiB would fill a language model's context.
 */
export const DEFAULT_TOOL_MAX_CHARS = 4_000;

const maxCharsInput = z
  .number()
  .int()
  .min(0)
  .max(MAX_TEXT_CHARS)
  .optional()
  .describe(`characters of UART text to answer: its head and tail, with how many were cut (default ${DEFAULT_TOOL_MAX_CHARS}; 0: all)`);

/** `text` cut to `maxChars` (0: whole), as `uart_text` with `uart_cut_chars`. */
function uartText(text: string, maxChars: number | undefined): { uart_text: string; uart_cut_chars: number } {
  const limit = maxChars ?? DEFAULT_TOOL_MAX_CHARS;
  const cut = headAndTail(text, limit === 0 ? undefined : limit);
  return { uart_text: cut.text, uart_cut_chars: cut.cutChars };
}

/** A job as a tool answers it: its UART as (cut) text, never base64 or chunks. */
function jobAnswer(job: Job, maxChars: number | undefined) {
  const { uart, ...rest } = job;
  return { ...rest, uart: uart ? { bytes: uart.bytes, dropped_bytes: uart.dropped_bytes, time_base: uart.time_base } : null, ...uartText(uart?.text ?? '', maxChars) };
}

export function registerBenchTools(server: McpServer, client: BenchClient, options: BenchToolOptions): void {
  const firmwareOf = async (args: { board: string; elf_path?: string | undefined; elf_base64?: string | undefined; example_firmware?: boolean | undefined }): Promise<Uint8Array> => {
    const given = [args.elf_path, args.elf_base64, args.example_firmware ? true : undefined].filter((v) => v !== undefined).length;
    if (given !== 1) throw new ToolInputError('give the ELF as elf_path, as elf_base64, or example_firmware: true, one of them');
    if (args.example_firmware) return client.exampleFirmware(args.board);
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
        'Flash an ELF on a board, run it for uart_seconds of the device clock and answer the UART it printed (as text, its head and tail when long) and the outcome. With expect_text, passed as soon as the UART contains it: the job is then cancelled, so the board is free at once. Queues behind the board\'s current holder for up to wait_seconds.',
      inputSchema: {
        board: z.string().min(1).describe('a board id from list_boards'),
        elf_path: z.string().optional().describe('an ELF file on the host of a local hilbench mcp'),
        elf_base64: z.string().optional().describe('the ELF bytes, base64'),
        example_firmware: z.boolean().optional().describe("run the bench's own example firmware for the board (it prints its banner, then a tick every 100 ms)"),
        uart_seconds: z.number().positive().max(30).optional().describe('seconds of UART to capture (default 0.8)'),
        expect_text: z.string().min(1).optional().describe('passed only when the UART contains this'),
        wait_seconds: z.number().min(0).max(300).optional().describe('how long to wait for a busy board (default 60)'),
        max_chars: maxCharsInput,
      },
    },
    (args) =>
      answer(async () => {
        const firmware = await firmwareOf(args);
        await using session = await client.openSession(args.board, { waitSeconds: args.wait_seconds ?? 60 });
        const submitted = await session.submitFlash(firmware, args.uart_seconds === undefined ? {} : { uartSeconds: args.uart_seconds });
        let seen = false;
        if (args.expect_text !== undefined) {
          // Watched live: the verdict is out once the text shows, and the job is stopped then (decision 0535).
          const watched = await client.waitForUart(submitted.job_id, args.expect_text, { timeoutMs: 600_000 });
          seen = watched.matched;
          if (seen) await client.cancelJob(submitted.job_id, { reason: 'run_firmware saw its expect_text' });
        }
        const job = await client.waitForJob(submitted.job_id);
        const text = job.uart?.text ?? '';
        const passed = args.expect_text === undefined ? job.state === 'done' : seen || (job.state === 'done' && text.includes(args.expect_text));
        const reason =
          args.expect_text === undefined
            ? `the job ended ${job.state}`
            : passed
              ? `the UART contains ${JSON.stringify(args.expect_text)}; the job was then cancelled to free the board`
              : `the job ended ${job.state} without printing ${JSON.stringify(args.expect_text)}`;
        return { outcome: passed ? 'passed' : 'failed', reason, job_id: job.job_id, state: job.state, ...uartText(text, args.max_chars), stop: job.stop, failure: job.failure };
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
      description: 'A job with its state, outcome and UART as text (its head and tail when long, with uart_cut_chars). wait_seconds (at most 60) answers as soon as it is finished.',
      inputSchema: { job_id: z.string().min(1), wait_seconds: z.number().positive().max(60).optional(), max_chars: maxCharsInput },
    },
    (args) => answer(async () => jobAnswer(await client.getJob(args.job_id, args.wait_seconds === undefined ? {} : { waitSeconds: args.wait_seconds }), args.max_chars)),
  );

  server.registerTool(
    'cancel_job',
    {
      title: 'Cancel a job',
      description: 'Stop a job once its verdict is known, so its board is free for the next run: it ends failed with kind cancelled, keeping the UART it printed. A finished job is answered as it is.',
      inputSchema: { job_id: z.string().min(1), reason: z.string().max(200).optional(), max_chars: maxCharsInput },
    },
    (args) => answer(async () => jobAnswer(await client.cancelJob(args.job_id, args.reason === undefined ? {} : { reason: args.reason }), args.max_chars)),
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
        max_chars: maxCharsInput,
      },
    },
    (args, extra) =>
      answer(async () => {
        const timeoutMs = (args.timeout_seconds ?? 30) * 1000;
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutMs);
        const signal = AbortSignal.any([controller.signal, extra.signal]);
        let text = '';
        try {
          for await (const event of client.uart(args.job_id, { signal })) {
            if (event.kind === 'end') return { stopped: 'job-finished', state: event.job.state, ...uartText(text, args.max_chars) };
            text += event.text;
            await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: `uart ${args.job_id}`, data: event.text } }).catch(() => undefined);
            if (args.until_text !== undefined && text.includes(args.until_text)) return { stopped: 'text-seen', ...uartText(text, args.max_chars) };
          }
          return { stopped: 'stream-ended', ...uartText(text, args.max_chars) };
        } catch (err) {
          if (controller.signal.aborted) return { stopped: 'timeout', ...uartText(text, args.max_chars) };
          throw err;
        } finally {
          clearTimeout(timer);
        }
      }),
  );
}
