/**
 * Entry of the thread that times register reads from outside the thread under test (perf/gdb-measure.ts,
 * `RegisterReadClient`): GDB is a process of its own, so its reads cross to whichever thread serves
 * them, as these do. Each message `{ port, count }` is answered with the per-read host ms.
 */
import { parentPort } from 'node:worker_threads';
import { z } from 'zod';
import { timeRegisterReads } from './gdb-measure.js';

const askSchema = z.object({ port: z.number().int().positive(), count: z.number().int().positive() });
const port = parentPort;
if (!port) throw new Error('perf/gdb-read-client-thread is the entry of a worker thread; perf/gdb-measure.ts starts it');
port.on('message', (raw: unknown) => {
  const ask = askSchema.parse(raw);
  void timeRegisterReads(ask.port, ask.count).then((samples) => port.postMessage(samples));
});
