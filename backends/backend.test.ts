import { describe, expect, it } from 'vitest';
import { type Backend, BackendError, type BoardHealth, keepsBoardHealth } from './backend.js';
import { jobFailureKinds } from '../wire/job-failure-kinds.js';
import { MockBackend } from './mock/mock-backend.js';

describe('BackendError', () => {
  it('classes every kind but bad-image and cancelled as an infrastructure failure (it counts towards quarantine)', () => {
    const infrastructure = jobFailureKinds.filter((kind) => new BackendError(kind, 'x').isInfrastructure);
    expect(infrastructure).toEqual(['unavailable', 'flash-failed', 'probe-not-found', 'reset-failed', 'serial-lost', 'timeout', 'internal']);
  });

  it('keeps the tool exit code and output tail for the failure reason', () => {
    const error = new BackendError('flash-failed', 'flash failed', { exitCode: 1, outputTail: '** Verify Failed **' });
    expect([error.exitCode, error.outputTail, error.message]).toEqual([1, '** Verify Failed **', 'flash failed']);
  });
});

describe('optional backend capabilities', () => {
  const healthy: BoardHealth = { consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined };
  const plain: Backend = new MockBackend();

  it('a backend keeps board health only with both health and release', () => {
    expect(keepsBoardHealth(plain)).toBe(false);
    expect(keepsBoardHealth({ ...plain, name: 'mock', availability: plain.availability, open: plain.open, health: async () => healthy })).toBe(false);
    const keeper: Backend = { name: 'probe', availability: plain.availability, open: plain.open, health: async () => healthy, release: async () => {} };
    expect(keepsBoardHealth(keeper)).toBe(true);
  });

  it('types the capabilities on Backend, so a look-alike method of another shape does not compile', () => {
    // @ts-expect-error release takes a board id and answers a promise (a backend's own release(tag) would clash)
    const clash: Backend = { name: 'mock', availability: plain.availability, open: plain.open, release: (tag: number) => tag };
    expect(clash.name).toBe('mock');
  });
});
