import { z } from 'zod';
import { jobFailureKinds } from '../job-failure-kinds.js';
import { BASE64_PATTERN } from '../base64-pattern.js';

/**
 * The worker protocol's bodies (docs/worker-protocol.md), validated at the edge like every other
 * request; the same schemas document it in /openapi.json. Bounded everywhere: a worker is a
 * credential, but a credential can leak.
 */

/**
 * How many instances of an emulated board a worker runs at once (issue 27, decision 0510). Bounded:
 * each instance is an engine or emulator process of its own, and a worker reports every instance.
 */
export const MAX_POOL_SIZE = 64;

const id = z.string().min(1).max(128);

export const workerBoardReportSchema = z.object({
  board: id,
  backend: z.string().min(1).max(32),
  available: z.boolean(),
  reason: z.string().max(2000).nullable().default(null),
  /** The board's backend keeps board health (quarantine) through the server (docs/lab.md). */
  keeps_health: z.boolean().default(false),
  /** The board's backend can run a health check of it. */
  health_check: z.boolean().default(false),
  /**
   * The board is unavailable because its health record says quarantined (its backend keeps health
   * in the server's store): the server then follows the store, so a release shows at once.
   */
  quarantined: z.boolean().default(false),
  /** How many instances of the board the worker runs at once (decision 0510): a pool of this many on this worker. */
  pool_size: z.number().int().min(1).max(MAX_POOL_SIZE).default(1),
});

/** The stores keep the count in a 32-bit INTEGER column (PostgreSQL refused more with a 500). */
const MAX_FAILURE_COUNT = 2 ** 31 - 1;
/** The latest instant a JavaScript Date holds: every view shows `since_ms` as an ISO date. */
const MAX_DATE_MS = 8.64e15;

export const boardHealthWireSchema = z.object({
  consecutive_failures: z.number().int().nonnegative().max(MAX_FAILURE_COUNT),
  last_failure: z.string().max(2000).nullable(),
  quarantine: z.object({ since_ms: z.number().int().nonnegative().max(MAX_DATE_MS), reason: z.string().max(2000) }).nullable(),
});

export const healthCheckReportSchema = z.discriminatedUnion('passed', [
  z.object({ passed: z.literal(true), uart_text: z.string().max(65_536), elapsed_ns: z.number().nonnegative() }),
  z.object({
    passed: z.literal(false),
    reason: z.string().max(8000),
    uart_text: z.string().max(65_536),
    /** The board cannot be checked on this worker (no health-check run): the administrator's 409. */
    refused: z.boolean().default(false),
  }),
]);

export const announceBodySchema = z.object({
  boards: z.array(workerBoardReportSchema).max(256),
  /** Jobs the worker still runs (after a reconnect): every other job it held fails as interrupted. */
  running_jobs: z.array(id).max(256).default([]),
});

export const heartbeatBodySchema = z.object({
  boards: z.array(workerBoardReportSchema).max(256).optional(),
});

export const claimBodySchema = z.object({
  boards: z.array(id).min(1).max(256),
  /** How long to wait for a job before answering `{"job": null}`. */
  wait_seconds: z.number().min(0).max(30).default(20),
});

export const inputBodySchema = z.object({
  /** Every input up to this number was written to the device (acknowledged; the server deletes it). */
  written_through: z.number().int().nonnegative(),
  /** How long to wait for input before answering none. */
  wait_seconds: z.number().min(0).max(30).default(20),
});

export const inputAnswerSchema = z.object({
  inputs: z
    .array(z.object({ seq: z.number().int(), base64: z.string() }))
    .meta({ description: 'Serial input after `written_through`, in the order the server accepted it (numbered 1, 2, ... per job).' }),
  stop: z.string().optional().meta({ description: 'The job was asked to stop (its agent cancelled it, its session ended): why. The worker stops it now (decision 0535).' }),
});

const chunkSchema = z.object({
  at_ns: z.number().nonnegative(),
  /** The chunk's bytes, standard base64 with padding (anything else would be decoded in part, silently). */
  base64: z.string().max(1_000_000).regex(BASE64_PATTERN, { message: 'Value error, base64 must be standard base64 with its = padding' }),
});

const captureFields = {
  time_base: z.enum(['simulated', 'wall']),
  clock_source: z.string().max(200).nullable().default(null),
  dropped_bytes: z.number().int().nonnegative(),
  chunks: z.array(chunkSchema).max(100_000),
};

export const uartBodySchema = z.object({ offset: z.number().int().nonnegative(), ...captureFields });

const captureSchema = z.object(captureFields);

/** A UART chunk as a worker reports it: device ns and base64 bytes. */
export type WireChunk = z.infer<typeof chunkSchema>;
/** A worker's UART capture as the server receives it (after parsing). */
export type WireCapture = z.infer<typeof captureSchema>;

const stopSchema = z.discriminatedUnion('reason', [
  z.object({ reason: z.enum(['elapsed', 'until']), elapsed_ns: z.number().nonnegative() }),
  z.object({ reason: z.literal('exited'), exit_code: z.number().int(), elapsed_ns: z.number().nonnegative() }),
  z.object({ reason: z.literal('crashed'), message: z.string().max(8000), elapsed_ns: z.number().nonnegative() }),
]);

export const finishBodySchema = z.object({
  outcome: z.discriminatedUnion('state', [
    z.object({
      state: z.literal('done'),
      uart: captureSchema,
      stop: stopSchema,
      flash_ms: z.number().nonnegative(),
      run_ms: z.number().nonnegative(),
    }),
    z.object({
      state: z.literal('failed'),
      failure: z.object({ kind: z.enum(jobFailureKinds), message: z.string().max(8000) }),
      uart: captureSchema.nullable(),
    }),
  ]),
});

export const announceAnswerSchema = z.object({
  worker_id: z.string(),
  label: z.string(),
  heartbeat_seconds: z.number().meta({ description: 'Send a heartbeat at least this often.' }),
  offline_after_seconds: z.number().meta({ description: 'Without a heartbeat for this long, the worker and its boards are offline.' }),
  claim_seconds: z.number().meta({ description: "A running job's claim lapses (the job fails as interrupted) unless renewed within this." }),
  interrupted_jobs: z.array(z.string()).meta({ description: 'Jobs this worker held that it no longer runs, failed as interrupted.' }),
});

export const okAnswerSchema = z.object({ ok: z.literal(true) });

export const claimAnswerSchema = z.object({
  health_check: z
    .object({
      check_id: z.string(),
      board: z.string(),
      instance: z.string().optional().meta({ description: 'The instance of the board (a pool of physical boards) to check with its own health-check firmware (decision 0606); absent: the board itself.' }),
      timeout_ms: z.number().int(),
    })
    .nullable()
    .meta({ description: "An administrator's health check of one of the worker's boards: run it, then POST its outcome to /api/v1/worker/health-checks/{check_id}." }),
  job: z
    .object({
      job_id: z.string(),
      board: z.string(),
      instance: z.string().optional().meta({ description: 'The instance of the board (pool) the job runs on (decision 0510); absent: the board itself.' }),
      firmware_sha256: z.string(),
      uart_seconds: z.number(),
      max_uart_bytes: z.number().int(),
      debug: z
        .object({ idle_timeout_ms: z.number().int(), max_debug_ms: z.number().int() })
        .optional()
        .meta({ description: 'A debug job (issue 32): flash it with the core halted and serve the debug streams of /api/v1/worker/jobs/{job_id}/debug/events.' }),
    })
    .nullable(),
});

export const jobControlSchema = z.object({
  stop: z.string().nullable().meta({ description: 'Why the job must stop now (cancelled, or no longer this worker’s); null to go on.' }),
});

export const finishAnswerSchema = z.object({ job_id: z.string(), state: z.enum(['done', 'failed']) });

/** Control characters (C0, DEL and C1) are refused in labels, as in agents' (bench-schemas.ts): they would corrupt logs and pages. */
export const createWorkerBodySchema = z.object({ label: z.string().min(1).max(100).regex(/^[^\x00-\x1f\x7f-\x9f]*$/) });

const workerViewSchema = z.object({
  worker_id: z.string(),
  label: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  last_seen_at: z.string().nullable(),
  online: z.boolean(),
  boards: z.array(z.object({ board: z.string(), backend: z.string(), available: z.boolean(), reason: z.string().nullable() })),
});

export const workerCreatedSchema = workerViewSchema.extend({ token: z.string().meta({ description: 'The worker token (hbw_...), shown once.' }) });
export const workerListSchema = z.object({ workers: z.array(workerViewSchema) });
export const workerViewAnswerSchema = workerViewSchema;

/** The worker protocol's answers, named in /openapi.json. */
export const workerOpenApiComponents = {
  WorkerAnnounced: announceAnswerSchema,
  WorkerOk: okAnswerSchema,
  WorkerClaim: claimAnswerSchema,
  WorkerJobControl: jobControlSchema,
  WorkerSerialInput: inputAnswerSchema,
  WorkerBoardHealth: boardHealthWireSchema,
  WorkerJobFinished: finishAnswerSchema,
  WorkerCreated: workerCreatedSchema,
  WorkerList: workerListSchema,
  Worker: workerViewAnswerSchema,
};
