import { describe, expect, it } from 'vitest';
import { finishedJobStates, isFinishedJobState, jobStates } from './job-states.js';

describe('job states', () => {
  it('a job ends done or failed, and only there', () => {
    expect(jobStates.filter(isFinishedJobState)).toEqual([...finishedJobStates]);
    expect(finishedJobStates).toEqual(['done', 'failed']);
    expect(isFinishedJobState(undefined)).toBe(false);
  });
});
