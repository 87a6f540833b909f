import type { z } from 'zod';
import type { agentRegistrationSchema, boardListSchema, boardSchema, healthSchema, jobSchema, sessionSchema } from '../server/bench/bench-schemas.js';

/**
 * The bench API's answers as TypeScript types, derived from the zod schemas the service validates
 * and documents its answers with (server/bench/bench-schemas.ts): one source of truth.
 */
export type AgentRegistration = z.infer<typeof agentRegistrationSchema>;
export type Session = z.infer<typeof sessionSchema>;
export type Board = z.infer<typeof boardSchema>;
export type BoardList = z.infer<typeof boardListSchema>;
export type Health = z.infer<typeof healthSchema>;
export type Job = z.infer<typeof jobSchema>;
export type JobState = Job['state'];
