/**
 * Entry of the raw rp2040js baseline's worker thread (perf/raw-rp2040js.ts `RawRp2040jsThread`):
 * builds raw chips and runs them on request, so that the baseline runs in an isolate of its own,
 * as the sim backend's engine does (decision 0571).
 */
import { parentPort } from 'node:worker_threads';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { type RawChip, type RawThreadReply, type RawThreadRequest, rawRp2040jsChip, rawRp2040jsRun } from './raw-rp2040js.js';

if (!parentPort) throw new Error('perf/raw-rp2040js-thread is the entry of a worker thread; RawRp2040jsThread starts it');
const port = parentPort;
const rom = new OwnBootrom();
let chip: RawChip | undefined;

port.on('message', (request: RawThreadRequest) => {
  let reply: RawThreadReply;
  try {
    if (request.kind === 'load') {
      chip = rawRp2040jsChip(request.bytes, rom);
      reply = { kind: 'loaded' };
    } else {
      if (!chip) throw new Error('run before load');
      const run = rawRp2040jsRun(chip, rom);
      chip = undefined;
      reply = { kind: 'ran', instructions: run.instructions, simulatedNanos: run.simulatedNanos };
    }
  } catch (err) {
    reply = { kind: 'failed', message: (err as Error).message };
  }
  port.postMessage(reply);
});
