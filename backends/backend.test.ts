import { describe, expect, it } from 'vitest';
import { BackendError, backendErrorKinds } from './backend.js';

describe('BackendError', () => {
  it('classes every kind but bad-image and cancelled as an infrastructure failure (it counts towards quarantine)', () => {
    const infrastructure = backendErrorKinds.filter((kind) => new BackendError(kind, 'x').isInfrastructure);
    expect(infrastructure).toEqual(['unavailable', 'flash-failed', 'probe-not-found', 'reset-failed', 'serial-lost', 'timeout', 'internal']);
  });

  it('keeps the tool exit code and output tail for the failure reason', () => {
    const error = new BackendError('flash-failed', 'flash failed', { exitCode: 1, outputTail: '** Verify Failed **' });
    expect([error.exitCode, error.outputTail, error.message]).toEqual([1, '** Verify Failed **', 'flash failed']);
  });
});
