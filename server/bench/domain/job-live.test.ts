import { describe, expect, it } from 'vitest';
import { type JobLiveEvent, JobLive } from './job-live.js';

describe('JobLive', () => {
  it('tells a job listener and every-job listeners, and stops after unsubscribe', () => {
    const live = new JobLive();
    const own: JobLiveEvent[] = [];
    const all: string[] = [];
    const off = live.subscribe('job_a', (e) => own.push(e));
    live.subscribeAll((jobId, e) => all.push(`${jobId}:${e.kind}`));
    live.publishState('job_a', 'running');
    live.publishUart('job_b', { offset: 0, atNanos: 5, bytes: new Uint8Array([65]) });
    off();
    live.publishState('job_a', 'done');
    expect(own).toEqual([{ kind: 'state', state: 'running' }]);
    expect(all).toEqual(['job_a:state', 'job_b:uart', 'job_a:state']);
  });

  it('keeps telling other listeners when one throws', () => {
    const live = new JobLive();
    const seen: string[] = [];
    live.subscribe('j', () => {
      throw new Error('closed response');
    });
    live.subscribe('j', (e) => seen.push(e.kind));
    live.publishState('j', 'failed');
    expect(seen).toEqual(['state']);
  });
});
