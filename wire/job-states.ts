/**
 * The states of a flash job (docs/bench-api.md, "Jobs"), in the order a job moves through them.
 * The one list: the bench client's schema, the scenario `wait-job` step and the bench store use it.
 */
export const jobStates = ['queued', 'flashing', 'running', 'done', 'failed'] as const;
export type JobState = (typeof jobStates)[number];

/** The states a job ends in; it changes no more after one of them. */
export const finishedJobStates = ['done', 'failed'] as const satisfies readonly JobState[];
export type FinishedJobState = (typeof finishedJobStates)[number];

/** True when `state` is one a job ends in. */
export function isFinishedJobState(state: unknown): state is FinishedJobState {
  return (finishedJobStates as readonly unknown[]).includes(state);
}
