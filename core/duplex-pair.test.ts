import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { duplexPair } from './duplex-pair.js';

describe('duplexPair', () => {
  it('carries bytes both ways, and an end on one side closes both', async () => {
    const [a, b] = duplexPair();
    const fromA: Buffer[] = [];
    b.on('data', (chunk: Buffer) => fromA.push(chunk));
    const toA = once(a, 'data') as Promise<[Buffer]>;
    a.write('$g#67');
    b.write('+$00#00');
    expect((await toA)[0].toString()).toBe('+$00#00');
    const closed = Promise.all([once(a, 'close'), once(b, 'close')]);
    a.on('data', () => undefined);
    a.end();
    await closed;
    expect(Buffer.concat(fromA).toString()).toBe('$g#67');
  });

  it('holds a writer whose reader stops reading: what waits stays bounded', async () => {
    const [a, b] = duplexPair();
    b.pause();
    const chunk = Buffer.alloc(16 * 1024);
    let writes = 0;
    while (a.write(chunk)) writes += 1;
    // The reader's buffer (16 KiB by default) and one chunk of the writer's: nothing grows without a reader.
    expect(writes).toBeLessThan(4);
    expect(b.readableLength + a.writableLength).toBeLessThanOrEqual(b.readableHighWaterMark + a.writableHighWaterMark + chunk.length);
    const drained = once(a, 'drain');
    b.resume();
    await drained;
  });

  it('destroying one end closes the other', async () => {
    const [a, b] = duplexPair();
    const closed = once(b, 'close');
    a.destroy();
    await closed;
    expect(b.destroyed).toBe(true);
  });
});
