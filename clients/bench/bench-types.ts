import type { z } from 'zod';
import type { agentRegistrationSchema, boardListSchema, boardSchema, healthSchema, jobSchema, sessionSchema } from '../../wire/bench/bench-schemas.js';
import type { boardQueueSchema, jobTextSchema } from '../../wire/bench/job-answer-schemas.js';
import type { armAnswerSchema } from '../../wire/bench/debug-schemas.js';

/**
 * The bench API's answers as TypeScript types, derived from the zod schemas the service validates
 * and documents its answers with (wire/bench/bench-schemas.ts): one source of truth.
 */
export type AgentRegistration = z.infer<typeof agentRegistrationSchema>;
export type Session = z.infer<typeof sessionSchema>;
/** The terms a session armed for debugging got (issue 32). */
export type DebugArmed = z.infer<typeof armAnswerSchema>;
export type Board = z.infer<typeof boardSchema>;
export type BoardList = z.infer<typeof boardListSchema>;
export type Health = z.infer<typeof healthSchema>;
export type Job = z.infer<typeof jobSchema>;
export type JobState = Job['state'];
/** A job read with its UART as (cut) text: `BenchClient.getJobText` (decision 0537). */
export type JobText = z.infer<typeof jobTextSchema>;
/** A board's session queue as a waiter sees it: `BenchClient.boardQueue`. */
export type BoardQueue = z.infer<typeof boardQueueSchema>;
