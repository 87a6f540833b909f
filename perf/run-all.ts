/**
 * `npm run bench`: runs every benchmark on this machine and writes docs/performance.md.
 * Speed is measured here, never asserted in tests.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { runBenchApiBench } from './bench-api.bench.js';
import { runDebugBench } from './debug.bench.js';
import { runQemuBench, runSimBench } from './emulators.bench.js';
import { type BenchRow, markdownTable } from './measure.js';
import { runRelayCoreBench } from './relay-core.bench.js';
import { runRelayIngestBench } from './relay-ingest.bench.js';
import { runRelaySearchBench } from './relay-search.bench.js';
import { runRomLoopBench } from './rom-loop.bench.js';
import { runLabBench } from './lab.bench.js';
import { runReplicasBench } from './replicas.bench.js';
import { runStartupBench } from './startup.bench.js';
import { runLiveUartBench } from './live-uart.bench.js';
import { runHealthUnderSimLoadBench, runSimParallelBench } from './sim-threads.bench.js';

const sections: Array<{ title: string; intro: string; run: () => Promise<BenchRow[]> }> = [
  {
    title: 'CLI start-up',
    intro: 'The compiled CLI (`dist/bin/hilbench.js`, what the installed package runs) against `node -e 0`, alternately in the same run (issue 17).',
    run: () => runStartupBench(),
  },
  {
    title: 'Bench service on the mock backend',
    intro: 'Flash jobs through the HTTP API against a bare HTTP round trip on the same machine (issue 2).',
    run: () => runBenchApiBench(),
  },
  {
    title: 'Simulator (sim backend)',
    intro: 'Simulated instructions per host second and the ratio of simulated to real time (issue 3).',
    run: () => runSimBench(),
  },
  {
    title: 'SDK-style RP2040 image against raw rp2040js',
    intro:
      'Instructions per second of rom-test.elf (boot2 stage, ROM lookups, soft float and double calls on the own boot ROM) through the sim backend, and of the same instruction stream on raw rp2040js, measured alternately in the same run (issue 12).',
    run: () => runRomLoopBench(),
  },
  {
    title: 'Simulators on every core: devices at once',
    intro:
      "4 simulated devices running 20 simulated seconds of hello at once against one alone, per board, on the sim backend (each device's engine in a worker thread of its own: decision 0520), alternately in one run (issue 27).",
    run: () => runSimParallelBench(),
  },
  {
    title: 'Simulators on every core: the server stays fast',
    intro: '`GET /api/v1/health` p99 while every simulated board runs a job, against the same server idle, alternately in one run (issue 27).',
    run: () => runHealthUnderSimLoadBench(),
  },
  {
    title: 'QEMU backend overhead',
    intro: 'A job through the backend against a direct qemu-system-arm run of the same ELF for the same capture (issue 3).',
    run: () => runQemuBench(),
  },
  {
    title: 'Live UART: the first byte at a stream client',
    intro:
      'Time from submitting a flash job to the first UART byte reaching a client of `GET /api/v1/jobs/{id}/uart` (Server-Sent Events), per backend, and for QEMU against spawn to the first byte of a direct `qemu-system-arm -serial stdio` of the same ELF, alternately in one run (issue 11).',
    run: () => runLiveUartBench(),
  },
  {
    title: 'Lab: a remote bench worker against the one in the server',
    intro:
      "The same QEMU job, submit to done, run by the worker in the server's process and by a `hilbench worker` claiming it over HTTP on loopback, alternately in one run (issue 10).",
    run: () => runLabBench(),
  },
  {
    title: 'Lab: two replicas on one PostgreSQL database against one',
    intro: 'Flash jobs per second on mock boards through one replica and through two sharing the database, each replica running its own worker, in one run (issue 10).',
    run: () => runReplicasBench(),
  },
  {
    title: 'GDB through hilbench debug',
    intro:
      "Per backend, a GDB register read (`g`, one at a time, after the target answered `?`) through `hilbench debug`'s bridge (the RSP framing checks, one debugger per board) against the same read on the engine's own GDB server behind a plain TCP forward, and real GDB in batch mode from `target remote` to halted at `main`, both alternately in one run (issue 32, docs/debug.md).",
    run: () => runDebugBench(),
  },
  {
    title: 'Relay core',
    intro: 'Vote verification per second (with signature checks), the full scp-s5 tally of one item (the reference), and the incremental tally per statement that the relay runs on its write path (issues 5 and 18).',
    run: async () => (await runRelayCoreBench()) as BenchRow[],
  },
  {
    title: 'Relay ingest through HTTP',
    intro:
      "Signed votes accepted per second by POST /items/{id}/vote (signature check, store, the relay node's tally and its own statements, and the answer only once the commit is on disk: decision 0480) from an outside client process, sequential and by 4 clients, at 100, 1000 and 10 000 voters, beside the floor of an authenticated GET /me on the same relay; issue 18's goals as ratios of rates measured in the same run. One signature check and one WAL sync are measured beside the floor: the 'at most' rows are the sequential ratio a vote would reach if it cost the floor plus those two and nothing else; where the rest of a vote's time goes, and why the two floor ratios stay below their goals: decision 0496.",
    run: () => runRelayIngestBench(),
  },
  {
    title: 'Relay search through the trigram index',
    intro:
      "GET /search's item query over 100 000 titles, for a q that matches one of them (what the index is for) and for one that matches about a quarter (its worst case): through the trigram index (FTS5 on SQLite, pg_trgm on PostgreSQL) against the plain LIKE scan it replaced, alternately in the same run (decisions 0505, 0506).",
    run: () => runRelaySearchBench(),
  },
];

// `npm run bench -- --only relay` re-measures the sections whose title contains a given word and
// keeps the others as the last full run wrote them (with that run's header line).
const onlyIndex = process.argv.indexOf('--only');
const only = onlyIndex >= 0 ? process.argv.slice(onlyIndex + 1).map((w) => w.toLowerCase()) : [];
const performanceFile = new URL('../docs/performance.md', import.meta.url);
const previous = new Map<string, string>();
if (only.length > 0 && existsSync(performanceFile)) {
  for (const part of readFileSync(performanceFile, 'utf8').split(/^## /m).slice(1)) {
    const [title, ...rest] = part.split('\n');
    previous.set(title!.trim(), rest.join('\n').trim());
  }
}
const measuredOn = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`;
const parts: string[] = [
  '# Performance',
  '',
  `Written by \`npm run bench\` (\`perf/run-all.ts\`) on ${new Date().toISOString().slice(0, 10)}: ${measuredOn}.` +
    (only.length > 0 ? ` Sections re-measured that day with \`--only ${only.join(' ')}\` are marked; the others are from the last full run.` : ''),
  'Numbers are from one run on a shared machine; compare runs on the same machine only.',
  '',
];
for (const section of sections) {
  const selected = only.length === 0 || only.some((w) => section.title.toLowerCase().includes(w));
  const kept = previous.get(section.title);
  if (!selected && kept !== undefined) {
    parts.push(`## ${section.title}`, '', kept, '');
    continue;
  }
  process.stdout.write(`${section.title}...\n`);
  let body: string;
  try {
    body = markdownTable(await section.run());
  } catch (err) {
    body = `Not measured: ${(err as Error).message}`;
  }
  const mark = only.length > 0 ? `(Re-measured with \`--only\` on ${measuredOn}.)\n\n` : '';
  parts.push(`## ${section.title}`, '', section.intro, '', mark + body, '');
  process.stdout.write(`${body}\n\n`);
}
writeFileSync(performanceFile, parts.join('\n'));
process.stdout.write('wrote docs/performance.md\n');
