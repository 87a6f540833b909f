/**
 * A sim engine thread entry whose engines fail on purpose, for the tests of what a crashed or
 * hung engine does to its job (backends/sim/sim-thread-faults.test.ts): pass its URL as
 * `SimBackend`'s `threadEntry`. A board whose id ends in one of the faults below runs the real
 * engine for 2 ms of simulated time, then fails that way; any other board runs normally.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { simEngineFactory, type EngineFactoryFor } from '../../backends/sim/sim-engines.js';
import { simThreadData } from '../../backends/sim/sim-thread-protocol.js';
import { serveSimThread } from '../../backends/sim/sim-thread-service.js';
import type { SimEngine } from '../../sim/sim-engine.js';

export const simThreadFaults = {
  /** `advance` throws: an exception inside a request, answered as the run's failure. */
  throws: '-throws',
  /** An exception thrown outside any request (from a queued callback): ends the thread. */
  uncaught: '-uncaught',
  /** The engine ends its thread with exit code 7. */
  exits: '-exits',
  /** The engine prints `hanging\n`, then loops for ever inside `advance`. */
  hangs: '-hangs',
} as const;

const FAULT_AFTER_NANOS = 2_000_000;

function faulty(engine: SimEngine, fault: keyof typeof simThreadFaults): SimEngine {
  let announced = false;
  let hangAfterNanos: number | undefined;
  return new Proxy(engine, {
    get(target, key, receiver) {
      if (key === 'advance') {
        return (targetNanos: number) => {
          if (target.nanos < FAULT_AFTER_NANOS) return target.advance(Math.min(targetNanos, FAULT_AFTER_NANOS));
          if (fault === 'throws') throw new TypeError('engine exploded');
          if (fault === 'uncaught') {
            setImmediate(() => {
              throw new RangeError('engine exploded outside a request');
            });
            return target.advance(targetNanos);
          }
          if (fault === 'exits') {
            // In a worker thread this ends the thread only: the fault under test.
            process.exit(7);
          }
          // Hangs: first lets the run hand out the announcement and reach its next slice (where the
          // batch goes to the host), then never returns.
          if (!announced) return undefined;
          hangAfterNanos ??= targetNanos;
          if (targetNanos > hangAfterNanos) for (;;);
          return target.advance(targetNanos);
        };
      }
      if (key === 'takeUartOutput' && fault === 'hangs') {
        return (options: { partial: boolean }) => {
          if (target.nanos < FAULT_AFTER_NANOS || announced) return target.takeUartOutput(options);
          announced = true;
          return { atNanos: target.nanos, bytes: new TextEncoder().encode('hanging\n') };
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      // A debugger's stub drives the faulty engine too: it is built on the proxy, not the engine inside.
      if (key === 'openGdb' && typeof value === 'function') return value.bind(receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const faultyEngineFactory: EngineFactoryFor = (board, options) => {
  const real = simEngineFactory(board, options);
  const fault = (Object.keys(simThreadFaults) as Array<keyof typeof simThreadFaults>).find((f) => board.id.endsWith(simThreadFaults[f]));
  return fault ? (image) => faulty(real(image), fault) : real;
};

if (parentPort) serveSimThread(parentPort, { ...simThreadData(workerData), engineFactory: faultyEngineFactory });
