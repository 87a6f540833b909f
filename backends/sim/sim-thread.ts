/**
 * Entry point of a sim engine thread (a `worker_threads` Worker started by `SimThread`): serves
 * the real engines (rp2040js, avr8js) on the port to the host. See docs/backends/sim.md.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { simEngineFactory } from './sim-engines.js';
import { simThreadData } from './sim-thread-protocol.js';
import { serveSimThread } from './sim-thread-service.js';

if (!parentPort) throw new Error('backends/sim/sim-thread is the entry of a worker thread; the sim backend starts it');
serveSimThread(parentPort, { ...simThreadData(workerData), engineFactory: simEngineFactory });
