import { z } from 'zod';
import { fileField, numericTextField, textField } from '../form-fields.js';
import { jobStates } from '../job-states.js';

/** The longest a session request may wait in a board's queue, seconds. */
export const MAX_SESSION_WAIT_SECONDS = 300;

/**
 * The bench API's wire shapes (spec 0.3.4 plus docs/bench-api.md for the parts the spec does
 * not show). The server validates input forms with these schemas and generates `/openapi.json`
 * from them; responses are built as these types, so the document describes what is sent; the one
 * `BenchClient` (clients/bench) parses every answer with them.
 */

/** Control characters (C0, DEL and C1) are refused in labels: they would corrupt logs and pages. */
const NO_CONTROL_CHARS = /^[^\x00-\x1f\x7f-\x9f]*$/;

/**
 * The spec's form defaults (bench-service.md): an absent `idle_seconds`, `uart_seconds` or
 * `label` takes these, so the configured limits must admit them (server/bench/domain/bench-limits.ts).
 */
export const FORM_DEFAULTS = { idleSeconds: '90', uartSeconds: '0.8', label: 'agent' } as const;

/** The configured limits the forms are bounded by (the server's `BenchLimits` has them all). */
export interface FormLimits {
  maxLabelLength: number;
  minIdleSeconds: number;
  maxIdleSeconds: number;
  maxFirmwareBytes: number;
  maxUartSeconds: number;
}

/** Form schemas; bounds come from the configured limits. */
export function buildFormSchemas(limits: FormLimits) {
  return {
    agentRegister: z.object({
      label: textField({
        minLength: 1,
        maxLength: limits.maxLabelLength,
        pattern: NO_CONTROL_CHARS,
        default: FORM_DEFAULTS.label,
        description: `A public name for the agent, shown on the pages and in "board held by" answers; 1..${limits.maxLabelLength} characters, no control characters.`,
      }),
    }),
    sessionOpen: z.object({
      board: textField({ minLength: 1, maxLength: 64, description: 'Board id, as listed by GET /api/v1/boards.' }),
      idle_seconds: numericTextField({
        default: FORM_DEFAULTS.idleSeconds,
        ge: limits.minIdleSeconds,
        le: limits.maxIdleSeconds,
        description: `Numeric text: seconds without a heartbeat after which the session expires and the board is freed; ${limits.minIdleSeconds} <= x <= ${limits.maxIdleSeconds}, fractions allowed.`,
      }),
      wait_seconds: numericTextField({
        default: '0',
        ge: 0,
        le: MAX_SESSION_WAIT_SECONDS,
        description: `Extension: numeric text, seconds to wait in the board's queue (first come first served) when someone else holds it, answered when the lease is granted; 0 <= x <= ${MAX_SESSION_WAIT_SECONDS}. 0 (the default): answer 409 at once.`,
      }),
    }),
    flashJob: z.object({
      board: textField({ minLength: 1, maxLength: 64, description: 'Board id, as listed by GET /api/v1/boards.' }),
      firmware: fileField(`The firmware, an ELF32 file for the board's architecture, at most ${limits.maxFirmwareBytes} bytes.`),
      uart_seconds: numericTextField({
        default: FORM_DEFAULTS.uartSeconds,
        gt: 0,
        le: limits.maxUartSeconds,
        description: `Numeric text: seconds of UART capture after reset release, in the board's time base; 0 < x <= ${limits.maxUartSeconds}.`,
      }),
      session: textField({
        maxLength: 64,
        default: '',
        description: "Optional: the caller's active session on this board. Without it the board must be free and the job leases it for its own duration.",
      }),
    }),
  };
}

const iso = z.string().meta({ description: 'ISO 8601 UTC time, e.g. 2026-01-01T00:00:00.000Z' });

export const agentRegistrationSchema = z
  .object({
    agent_id: z.string(),
    label: z.string(),
    token: z.string().meta({ description: 'Bearer token (hb_...). Shown once: only its SHA-256 is stored.' }),
    created_at: iso,
  })
  .meta({ title: 'AgentRegistration' });

export const sessionSchema = z
  .object({
    session_id: z.string(),
    board: z.string(),
    instance: z.string().optional().meta({ description: 'Extension (decision 0510): the instance of the board (a pool of several) it holds; absent when the board is a pool of one, its own only instance.' }),
    state: z.enum(['active', 'ended', 'expired']),
    idle_seconds: z.number(),
    created_at: iso,
    expires_at: iso.meta({ description: 'When the lease frees itself unless a heartbeat arrives first.' }),
    ended_at: iso.nullable(),
    last_heartbeat_at: iso.nullable(),
  })
  .meta({ title: 'Session' });

export const boardStatuses = ['free', 'leased', 'busy', 'offline'] as const;

/** A pool of more than one instance (decision 0510); absent for a pool of one. */
const poolSchema = z
  .object({
    total: z.number().int(),
    free: z.number().int(),
    busy: z.number().int(),
    leased: z.number().int(),
    offline: z.number().int(),
    quarantined: z.number().int().meta({ description: 'Instances quarantined (decision 0551); counted among the offline too.' }),
    list: z.array(
      z.object({
        instance: z.string(),
        status: z.enum(boardStatuses),
        offline_reason: z.string().nullable().meta({ description: 'Why it is offline: its quarantine, its worker silent, or what its worker reports.' }),
        quarantined: z.boolean().meta({ description: 'Quarantined after consecutive infrastructure failures until an administrator releases it (POST /admin/boards/{instance}/release).' }),
        workers: z.array(z.object({ worker_id: z.string(), label: z.string(), online: z.boolean() })),
        held_by: z.string().nullable().meta({ description: 'The label of the agent holding it.' }),
      }),
    ),
  })
  .meta({ description: 'Extension (decisions 0510, 0551): the instances of a board that is a pool of several, counted by status.' });

export const boardSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    mcu: z.object({
      id: z.string(),
      name: z.string(),
      architecture: z.string(),
      core: z.string(),
      clock_hz: z.number().int(),
      memory: z.array(z.object({ name: z.string(), kind: z.string(), start: z.number().int(), size_bytes: z.number().int() })),
    }),
    backend: z.string().meta({ description: 'The backend that runs this board on this server (mock, sim, qemu, renode, probe).' }),
    status: z.enum(boardStatuses),
    offline_reason: z.string().nullable(),
    lease_expires_at: iso.nullable(),
    queued_jobs: z.number().int(),
    instances: poolSchema.optional(),
  })
  .meta({ title: 'Board' });

export const boardListSchema = z.object({ boards: z.array(boardSchema) }).meta({ title: 'BoardList' });

export const healthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']),
    version: z.string(),
    uptime_seconds: z.number(),
    boards: z.object({ online: z.number().int(), offline: z.number().int() }),
    database: z.enum(['ok', 'error']),
    storage: z.enum(['ok', 'full']).meta({ description: "full while the disk under the data directory is (nearly) full: uploads are answered 507, reads go on (docs/bench-api.md)." }),
  })
  .meta({ title: 'Health' });

const jobsByState = z.record(z.string(), z.number().int());

export const statsSchema = z
  .object({
    generated_at: iso,
    version: z.string(),
    boards: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        description: z.string(),
        mcu: z.string(),
        architecture: z.string(),
        backend: z.string(),
        status: z.enum(boardStatuses),
        offline_reason: z.string().nullable(),
        leased_by: z.string().nullable(),
        lease_expires_at: iso.nullable(),
        queued_jobs: z.number().int(),
        instances: poolSchema.optional(),
      }),
    ),
    recent_activity: z.array(z.object({ job_id: z.string(), board: z.string(), agent_label: z.string(), state: z.string(), at: iso })),
    totals: z.object({
      agents: z.number().int(),
      sessions_open: z.number().int(),
      jobs_total: z.number().int(),
      jobs_by_state: jobsByState,
      waitlist: z.number().int(),
    }),
  })
  .meta({ title: 'Stats' });

export const failureSchema = z
  .object({
    kind: z.string().meta({ description: 'bad-image, unavailable, flash-failed, probe-not-found, reset-failed, serial-lost, timeout, cancelled, internal or interrupted.' }),
    message: z.string(),
  })
  .meta({ title: 'JobFailure' });

export const jobSchema = z
  .object({
    job_id: z.string(),
    board: z.string(),
    instance: z.string().optional().meta({ description: 'Extension (decision 0510): the instance of the board (a pool of several) it runs on; absent when the board is a pool of one, its own only instance.' }),
    session_id: z.string().nullable(),
    state: z.enum(jobStates),
    firmware: z.object({
      sha256: z.string(),
      size_bytes: z.number().int(),
      elf: z.object({
        machine: z.number().int(),
        machine_name: z.string(),
        entry: z.number().int(),
        segments: z.array(z.object({ paddr: z.number().int(), vaddr: z.number().int(), file_size: z.number().int(), mem_size: z.number().int() })),
      }),
    }),
    uart_seconds: z.number(),
    uart: z
      .object({
        text: z.string().meta({ description: 'The captured bytes as UTF-8; invalid sequences become U+FFFD.' }),
        base64: z.string().meta({ description: 'The captured bytes exactly.' }),
        bytes: z.number().int(),
        dropped_bytes: z.number().int().meta({ description: 'Bytes the device or the per-job UART limit could not keep.' }),
        time_base: z.enum(['simulated', 'wall']),
        clock: z
          .string()
          .nullable()
          .meta({ description: "Extension: how the device's time advanced when its backend states it (QEMU: `host`, or `icount shift=N (...)` from the board file); null otherwise." }),
        chunks: z.array(z.object({ at_seconds: z.number(), text: z.string() })).meta({ description: 'Arrival times from reset release, bounded; see chunks_omitted.' }),
        chunks_omitted: z.number().int(),
      })
      .nullable(),
    stop: z
      .object({
        reason: z.enum(['elapsed', 'until', 'exited', 'crashed']),
        exit_code: z.number().int().optional(),
        message: z.string().optional(),
        elapsed_seconds: z.number(),
      })
      .nullable(),
    failure: failureSchema.nullable(),
    created_at: iso,
    started_at: iso.nullable(),
    finished_at: iso.nullable(),
    timings_ms: z.object({ queued: z.number().nullable(), flash: z.number().nullable(), run: z.number().nullable() }),
  })
  .meta({ title: 'Job' });

const leaseView = z.object({
  holder_kind: z.enum(['session', 'job']),
  session_id: z.string().nullable(),
  job_id: z.string().nullable(),
  agent_id: z.string(),
  agent_label: z.string(),
  expires_at: iso.nullable(),
});

/** A session request waiting for a board (decision 0555), as `GET /admin` shows it (decision 0605). */
const waiterView = z.object({
  agent_id: z.string(),
  agent_label: z.string(),
  queue: z.string().meta({ description: 'What it waits for: the board (any free instance of its pool) or one instance asked for by id.' }),
  position: z.number().int().meta({ description: '1-based place in that queue.' }),
  since: iso,
});

const adminJob = z.object({
  job_id: z.string(),
  agent_id: z.string(),
  agent_label: z.string(),
  board: z.string(),
  state: z.string(),
  created_at: iso,
  finished_at: iso.nullable(),
  failure: failureSchema.nullable(),
});

/** Board health kept by a backend that quarantines boards (the probe backend); null on /admin when none does. */
export const boardHealthSchema = z
  .object({
    backend: z.string().meta({ description: 'The backend keeping this board\'s health (e.g. probe).' }),
    consecutive_failures: z.number().int().meta({ description: 'Infrastructure failures since the last success or release.' }),
    last_failure: z.string().nullable().meta({ description: 'First line of the most recent infrastructure failure.' }),
    quarantined: z.boolean(),
    quarantined_since: iso.nullable(),
    quarantine_reason: z.string().nullable().meta({ description: 'What availability reports while quarantined; shown as offline_reason.' }),
  })
  .meta({ title: 'BoardHealth' });

export const boardReleaseSchema = z
  .object({
    board: z.string(),
    status: z.enum(boardStatuses).meta({ description: 'Status right after the release, from a fresh availability check.' }),
    offline_reason: z.string().nullable(),
    health: boardHealthSchema,
  })
  .meta({ title: 'BoardRelease' });

export const boardHealthCheckSchema = z
  .object({
    board: z.string(),
    passed: z.boolean().meta({ description: 'True when the health-check firmware printed its expected text; the board is then released.' }),
    reason: z.string().nullable().meta({ description: 'Why the check failed; null when it passed.' }),
    uart_text: z.string().meta({ description: 'What the health-check firmware printed (UTF-8, invalid sequences replaced).' }),
    elapsed_seconds: z.number().nullable().meta({ description: 'Seconds from reset release until the expected text appeared; null when it did not.' }),
    status: z.enum(boardStatuses).meta({ description: 'Status right after the check, from a fresh availability check.' }),
    offline_reason: z.string().nullable(),
    health: boardHealthSchema,
  })
  .meta({ title: 'BoardHealthCheck' });

export const adminSchema = z
  .object({
    generated_at: iso,
    boards: z.array(
      z.object({
        id: z.string(),
        backend: z.string(),
        status: z.enum(boardStatuses),
        offline_reason: z.string().nullable(),
        lease: leaseView.nullable(),
        queued_jobs: z.number().int(),
        health: boardHealthSchema.nullable(),
        instances: poolSchema.optional(),
        waiting: z.array(waiterView).meta({
          description:
            'Extension (decision 0605): the session requests waiting for this board (wait_seconds), in the store on every replica: its pool queue first, then each instance asked for by id, each in its order.',
        }),
      }),
    ),
    sessions: z.array(
      z.object({
        session_id: z.string(),
        agent_id: z.string(),
        agent_label: z.string(),
        board: z.string(),
        idle_seconds: z.number(),
        created_at: iso,
        expires_at: iso,
        last_heartbeat_at: iso.nullable(),
      }),
    ),
    recent_jobs: z.array(adminJob),
    recent_failures: z.array(adminJob),
    counts: z.object({
      agents: z.number().int(),
      sessions_open: z.number().int(),
      jobs_total: z.number().int(),
      jobs_by_state: jobsByState,
      waitlist: z.number().int(),
    }),
  })
  .meta({ title: 'Admin' });

export const openApiComponents = {
  AgentRegistration: agentRegistrationSchema,
  Session: sessionSchema,
  Board: boardSchema,
  BoardList: boardListSchema,
  Health: healthSchema,
  Stats: statsSchema,
  Job: jobSchema,
  JobFailure: failureSchema,
  Admin: adminSchema,
  BoardHealth: boardHealthSchema,
  BoardRelease: boardReleaseSchema,
  BoardHealthCheck: boardHealthCheckSchema,
};

export type AgentRegistrationBody = z.infer<typeof agentRegistrationSchema>;
export type SessionBody = z.infer<typeof sessionSchema>;
export type BoardBody = z.infer<typeof boardSchema>;
export type HealthBody = z.infer<typeof healthSchema>;
export type StatsBody = z.infer<typeof statsSchema>;
export type JobBody = z.infer<typeof jobSchema>;
export type AdminBody = z.infer<typeof adminSchema>;
export type BoardHealthBody = z.infer<typeof boardHealthSchema>;
export type BoardReleaseBody = z.infer<typeof boardReleaseSchema>;
export type BoardHealthCheckBody = z.infer<typeof boardHealthCheckSchema>;
