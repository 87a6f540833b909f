import { fork } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { systemClock } from '../core/clock.js';
import { defaultThreshold } from '../core/relay/quorum-set.js';
import { generateNodeKey } from '../core/relay/node-id.js';
import { parseVote, verifyVote } from '../core/relay/vote.js';
import { voteBy } from '../test/support/relay-test-kit.js';
import { percentile } from './measure.js';
import type { HopMessage } from './relay-vote-hop-thread.js';
import { type LoadRequest, loadRound, runLoadedRound } from './relay-ingest-scene.js';

/**
 * What the hop to a worker thread costs the relay's event loop per vote (issue 30, decision 0920):
 * the loop reads a vote's body, hands its bytes to a thread and writes the thread's small answer,
 * against answering at once (`bare`), and against doing the vote's own work on the loop (`inline`).
 * The relay's situation: an HTTP server on this process's main thread, votes by 4 clients from the
 * ingest bench's load client in another process (perf/relay-load-client.ts), real signed votes with
 * slices of 20 as bodies. The vote's own work is simulated by a spin of `--work-us` (decision
 * 0840: about 0.6 ms could move) on the thread (the `hop-*` modes) or on the loop (`inline`).
 *
 * Modes, measured in blocks, each block one round per mode in a rotated order (ABAB...):
 * - `bare`: read the body, answer 201 at once (the floor: HTTP in and out);
 * - `inline`: read the body, spin `--work-us` on the loop, answer;
 * - `hop-transfer`: the body's bytes copied into an ArrayBuffer of their own and transferred;
 * - `hop-string`: the body decoded on the loop and posted as a string (copied);
 * - `hop-clone`: the body's Buffer posted as is (structured clone of its bytes).
 * - `inline-check`: the vote's CPU-only work on the loop: `JSON.parse`, `parseVote`, `verifyVote`
 *   (canonical JSON and the Ed25519 check, the key cached as in the relay);
 * - `hop-check`: the same on the thread, from the body's bytes (posted as in `hop-clone`);
 * - `hop-parsed`: decision 0770's shape: the body parsed and validated on the loop (`JSON.parse`,
 *   `parseVote`), the vote posted as an object, the thread's outcome an object the loop serialises;
 * - `hop-batch`: as `hop-clone`, but the thread answers the votes it took in one turn (those queued
 *   while it worked) in one message, as a thread with group commit would answer a batch.
 * In the other `hop-*` modes the thread spins `--work-us` and answers `{ id, status, body }` (a short
 * string), the loop writes it. Per mode: the main thread's CPU per request (Linux `schedstat`, the
 * ingest bench's measure), rounds per second, and for the hops the time from `postMessage` to the
 * thread's `message` event (its wake-up) and back, in the sequential rounds (by 1 client), where the
 * thread and the loop are idle when a message is sent. The hop's cost on the loop is a hop mode's CPU
 * per request minus `bare`'s in the same block, the median over blocks.
 * `npx tsx perf/relay-vote-hop.ts [--blocks N] [--round N] [--clients N] [--work-us N] [--modes a,b]`.
 */
const MODES = ['bare', 'inline', 'hop-transfer', 'hop-string', 'hop-clone', 'inline-check', 'hop-check', 'hop-parsed', 'hop-batch'] as const;
type Mode = (typeof MODES)[number];

interface Options {
  blocks: number;
  round: number;
  clients: number;
  workUs: number;
  modes: Mode[];
}


interface Answer {
  id: number;
  status: number;
  /** The answer's text, or (`hop-parsed`) its object. */
  body?: string;
  answer?: unknown;
  arrivedMs: number;
  sentMs: number;
}

function spin(workUs: number): void {
  const until = performance.now() + workUs / 1000;
  while (performance.now() < until);
}

/** CPU ms of this process's main thread (the ingest bench's `schedstat` measure). */
function mainThreadCpuMs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

/** CPU ms of every thread of this process but the main one (the worker, V8's and libuv's helpers). */
function otherThreadsCpuMs(): number {
  let ms = 0;
  for (const tid of readdirSync('/proc/self/task')) if (Number(tid) !== process.pid) ms += Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  return ms;
}

class HopServer {
  mode: Mode = 'bare';
  readonly toThreadMs: number[] = [];
  readonly backMs: number[] = [];
  private next = 0;
  private readonly waiting = new Map<number, { res: ServerResponse; postedMs: number }>();
  constructor(
    private readonly worker: Worker,
    private readonly workUs: number,
  ) {
    worker.on('message', (a: Answer | Answer[]) => {
      if (Array.isArray(a)) for (const one of a) this.answered(one);
      else this.answered(a);
    });
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      if (this.mode === 'bare' || this.mode === 'inline' || this.mode === 'inline-check') {
        if (this.mode === 'inline') spin(this.workUs);
        if (this.mode === 'inline-check') {
          const parsed = parseVote(JSON.parse(body.toString('utf8')));
          if (!parsed.ok || !verifyVote(parsed.value, { keyChecked: true })) throw new Error('relay-vote-hop: the bench vote does not verify');
        }
        this.answer(res, 201, '{"stored":true}');
        return;
      }
      const id = this.next++;
      this.waiting.set(id, { res, postedMs: performance.timeOrigin + performance.now() });
      if (this.mode === 'hop-transfer') {
        const own = new Uint8Array(body.byteLength);
        own.set(body);
        this.worker.postMessage({ id, body: own, check: false } satisfies HopMessage, [own.buffer]);
      } else if (this.mode === 'hop-string') this.worker.postMessage({ id, body: body.toString('utf8'), check: false } satisfies HopMessage);
      else if (this.mode === 'hop-parsed') {
        const parsed = parseVote(JSON.parse(body.toString('utf8')));
        if (!parsed.ok) throw new Error('relay-vote-hop: the bench vote does not parse');
        this.worker.postMessage({ id, body: parsed.value, check: false } satisfies HopMessage);
      } else this.worker.postMessage({ id, body, check: this.mode === 'hop-check', batch: this.mode === 'hop-batch' } satisfies HopMessage);
    });
  }

  private answered(a: Answer): void {
    const nowMs = performance.timeOrigin + performance.now();
    const waiting = this.waiting.get(a.id);
    if (!waiting) return;
    this.waiting.delete(a.id);
    this.toThreadMs.push(a.arrivedMs - waiting.postedMs);
    this.backMs.push(nowMs - a.sentMs);
    this.answer(waiting.res, a.status, a.body ?? JSON.stringify(a.answer));
  }

  private answer(res: ServerResponse, status: number, body: string): void {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
}

function parseOptions(argv: string[]): Options {
  const value = (name: string, fallback: number) => {
    const k = argv.indexOf(name);
    return k >= 0 ? Number(argv[k + 1]) : fallback;
  };
  const k = argv.indexOf('--modes');
  const modes = k >= 0 ? ((argv[k + 1] ?? '').split(',') as Mode[]) : [...MODES];
  for (const mode of modes) if (!MODES.includes(mode)) throw new RangeError(`relay-vote-hop: unknown mode ${mode} (modes: ${MODES.join(', ')})`);
  return { blocks: value('--blocks', 8), round: value('--round', 800), clients: value('--clients', 4), workUs: value('--work-us', 600), modes };
}

/** Real signed votes (slices of 20 at 67 %), each request one vote's JSON as a client sends it. */
function voteRequests(count: number): LoadRequest[] {
  const keys = Array.from({ length: 21 }, () => generateNodeKey());
  const slice = { t: defaultThreshold(20), v: keys.slice(1).map((k) => k.nodeId), i: [] };
  const item = 'a'.repeat(64);
  const vote = voteBy(keys[0] as (typeof keys)[number], item, 'yes', 'vote', slice, systemClock);
  const body = JSON.stringify(vote);
  return Array.from({ length: count }, () => ({ method: 'POST', path: `/items/${item}/vote`, body }));
}

function median(values: number[]): number {
  return percentile(values, 50);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  // tsx's scoped importer for the thread's TypeScript (Node 20 gives a worker no loader hooks), as perf/raw-rp2040js.ts does.
  const entry = new URL('./relay-vote-hop-thread.ts', import.meta.url).href;
  const tsxApi = new URL('dist/esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json'))).href;
  const worker = new Worker(`import(${JSON.stringify(tsxApi)}).then((tsx) => tsx.tsImport(${JSON.stringify(entry)}, ${JSON.stringify(entry)}))`, { eval: true, workerData: { workUs: options.workUs } });
  const hop = new HopServer(worker, options.workUs);
  const server = createServer((req, res) => hop.handle(req, res));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = fork(fileURLToPath(new URL('./relay-load-client.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const requests = voteRequests(options.round);
  console.log(`vote body ${Buffer.byteLength(requests[0]?.body ?? '')} bytes; ${options.blocks} blocks of ${options.round} requests by ${options.clients} clients per mode; work ${options.workUs} µs; modes ${options.modes.join(', ')}`);
  const perMode = new Map<Mode, { loopMs: number[]; otherMs: number[]; perSecond: number[]; toThreadMs: number[]; backMs: number[]; sequentialPerSecond: number[] }>();
  for (const mode of options.modes) perMode.set(mode, { loopMs: [], otherMs: [], perSecond: [], toThreadMs: [], backMs: [], sequentialPerSecond: [] });
  const round = async (mode: Mode, clients: number) => {
    hop.mode = mode;
    hop.toThreadMs.length = 0;
    hop.backMs.length = 0;
    await loadRound(client, { baseUrl, requests, clients, expectStatus: 201 });
    const loopBefore = mainThreadCpuMs();
    const otherBefore = otherThreadsCpuMs();
    const result = await runLoadedRound(client);
    return { loopMs: (mainThreadCpuMs() - loopBefore) / requests.length, otherMs: (otherThreadsCpuMs() - otherBefore) / requests.length, perSecond: (requests.length * 1000) / result.elapsedMs };
  };
  try {
    for (const mode of options.modes) await round(mode, options.clients);
    for (let b = 0; b < options.blocks; b++) {
      const order = options.modes.map((_, k) => options.modes[(k + b) % options.modes.length] as Mode);
      for (const mode of order) {
        const m = perMode.get(mode);
        if (!m) continue;
        const r = await round(mode, options.clients);
        m.loopMs.push(r.loopMs);
        m.otherMs.push(r.otherMs);
        m.perSecond.push(r.perSecond);
        const s = await round(mode, 1);
        m.sequentialPerSecond.push(s.perSecond);
        // Latencies of the sequential round only: with 4 clients the time to the thread is mostly
        // the queue of votes before it, not its wake-up.
        m.toThreadMs.push(...hop.toThreadMs);
        m.backMs.push(...hop.backMs);
      }
    }
  } finally {
    client.kill();
    await worker.terminate();
    server.close();
  }
  const bare = perMode.get('bare');
  const inline = perMode.get('inline');
  console.log('| mode | loop µs per request | minus bare, µs | other threads µs per request | per second, 4 clients | per second, 1 client | 1 client: to the thread p50 / p90, µs | back p50 / p90, µs |');
  console.log('|---|---:|---:|---:|---:|---:|---|---|');
  for (const [mode, m] of perMode) {
    const minusBare = bare ? median(m.loopMs.map((v, k) => v - (bare.loopMs[k] ?? Number.NaN))) * 1000 : Number.NaN;
    const hops = m.toThreadMs.length > 0 ? [`${(percentile(m.toThreadMs, 50) * 1000).toFixed(0)} / ${(percentile(m.toThreadMs, 90) * 1000).toFixed(0)}`, `${(percentile(m.backMs, 50) * 1000).toFixed(0)} / ${(percentile(m.backMs, 90) * 1000).toFixed(0)}`] : ['', ''];
    console.log(`| ${mode} | ${(median(m.loopMs) * 1000).toFixed(0)} | ${minusBare.toFixed(0)} | ${(median(m.otherMs) * 1000).toFixed(0)} | ${median(m.perSecond).toFixed(0)} | ${median(m.sequentialPerSecond).toFixed(0)} | ${hops[0]} | ${hops[1]} |`);
  }
  const against = (mode: Mode) => (mode === 'hop-check' ? perMode.get('inline-check') : inline);
  for (const [mode, m] of perMode) {
    const base = against(mode);
    if (base && mode.startsWith('hop')) console.log(`${mode}: loop saved against its inline mode ${(median(m.loopMs.map((v, k) => (base.loopMs[k] ?? Number.NaN) - v)) * 1000).toFixed(0)} µs per vote; 4 clients ${median(m.perSecond.map((v, k) => v / (base.perSecond[k] ?? Number.NaN))).toFixed(3)} times inline, 1 client ${median(m.sequentialPerSecond.map((v, k) => v / (base.sequentialPerSecond[k] ?? Number.NaN))).toFixed(3)} times`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
