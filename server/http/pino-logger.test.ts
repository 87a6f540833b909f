import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { pinoLogger } from './pino-logger.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, destination };
}

describe('pinoLogger', () => {
  it('writes one JSON object per line with level, message and fields, and an error cause with its stack', () => {
    const { lines, destination } = capture();
    const log = pinoLogger({ level: 'info', name: 'hilbench-test', destination });
    log.info('job job_1 running', { jobId: 'job_1', board: 'pico', state: 'running', skipped: undefined });
    log.error('saving failed', new Error('disk full'), { requestId: 'r-1' });
    log.debug?.('not shown at info');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 30, name: 'hilbench-test', msg: 'job job_1 running', jobId: 'job_1', board: 'pico', state: 'running' });
    expect(lines[0]).not.toHaveProperty('skipped');
    expect(lines[1]).toMatchObject({ level: 50, msg: 'saving failed', requestId: 'r-1', err: { message: 'disk full', stack: expect.stringContaining('Error: disk full') } });
  });

  it('honours the level: warn hides info, debug shows debug', () => {
    const quiet = capture();
    pinoLogger({ level: 'warn', name: 'x', destination: quiet.destination }).info('hidden');
    expect(quiet.lines).toEqual([]);
    const chatty = capture();
    pinoLogger({ level: 'debug', name: 'x', destination: chatty.destination }).debug?.('shown', { route: '/api/v1/boards' });
    expect(chatty.lines).toMatchObject([{ level: 20, msg: 'shown', route: '/api/v1/boards' }]);
  });
});
