import Database from 'better-sqlite3';
import { fork } from 'node:child_process';
import { fdatasync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { systemClock } from '../core/clock.js';
import { defaultThreshold, type QuorumSet } from '../core/relay/quorum-set.js';
import { generateNodeKey } from '../core/relay/node-id.js';
import type { Vote } from '../core/relay/vote.js';
import { postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type TestNode } from '../test/support/relay-test-kit.js';
import { type LoadRequest, loadRound, runLoadedRound, runRound } from './relay-ingest-scene.js';

/**
 * Where the relay's event loop spends its time per accepted vote, against a `GET /me` (issue 30,
 * decision 0840): the ingest bench's scene (registered voters, slices of 20 at 67 %, the relay
 * node's slice of up to 1000 voters, a vote then an accept per voter, every slice stored first),
 * rounds by 4 clients of votes and of `GET /me` alternately, each round under V8's sampling
 * profiler (the inspector's `Profiler`), and each sample charged to the most specific part of the
 * relay its stack shows (`PARTS`). Per request, in µs of profile time, beside the main thread's CPU
 * time (`schedstat`): the profiler samples wall time, so on a loaded machine a part that gives its
 * core away (a system call) is charged for the wait; read the parts as shares of that CPU time.
 * Not part of `npm run bench`: a tool for finding work, not a measure of it.
 * `npx tsx perf/relay-ingest-profile.ts [--voters N] [--rounds N] [--round N] [--clients N] [--save DIR] [--count-sql]`.
 * `--save DIR` keeps each round's `.cpuprofile`; `--count-sql` prints the SQLite statements run per
 * request. `--perf-windows FILE` profiles nothing itself and writes each round's window on
 * `CLOCK_MONOTONIC` (and the main thread's id), for Linux `perf`, which samples CPU time only: run
 * the driver as `perf record -k CLOCK_MONOTONIC -e cpu-clock -g -- node --perf-basic-prof-only-functions
 * --interpreted-frames-native-stack --import tsx perf/relay-ingest-profile.ts --perf-windows FILE`
 * and charge the main thread's samples inside each window by `PARTS` (decision 0840 did).
 */
const PARTS: { part: string; test: (fn: string, url: string) => boolean }[] = [
  { part: 'signature check: OpenSSL on the loop, or the hand-off to the pool', test: (fn, url) => url.includes('/ed25519.') || fn === 'verify' || fn === 'verifyVote' || fn === 'verifyVoteAsync' },
  { part: 'canonical JSON', test: (_fn, url) => url.includes('/canonical-json.') },
  { part: 'hashing (SHA-256, slice hash)', test: (fn, url) => /^(quorumSetHash|sha256Hex|createHash|digest|update)$/.test(fn) && !url.includes('node_modules') },
  { part: 'parsing the vote (parseVote, its slice)', test: (fn, url) => url.includes('/core/relay/vote.') || url.includes('/core/relay/quorum-set.') || url.includes('/core/relay/problem.') },
  { part: 'zod', test: (_fn, url) => url.includes('node_modules/zod') },
  { part: "the relay node's tally (self-tally, growing tally and quorum, compiled slices)", test: (_fn, url) => /\/(self-tally|self-voter|growing-tally|growing-quorum|compiled-slice|tally|certificate-state|voting-tally|voting-rank)\./.test(url) },
  { part: "storeVote's JavaScript (statement log, slice book, Voting)", test: (_fn, url) => /\/(statement-log|slice-book|voting|signed-statements|signed-statement|statement-documents)\./.test(url) },
  { part: 'SQLite (better-sqlite3 native)', test: (fn, url) => url === '' && /^(run|get|all|iterate|exec|prepare|pragma|raw|pluck|expand|bind|transaction)$/.test(fn) },
  { part: 'store: executor, steps, repositories, transaction', test: (_fn, url) => url.includes('/server/storage/') || url.includes('/relay-store.') || url.includes('better-sqlite3') },
  { part: 'vote ingest and use case (batching, bulletin)', test: (_fn, url) => /\/(vote-ingest|post-vote|bounded-cache|bulletin-floor)\./.test(url) },
  { part: 'answers wait for the disk, store gates', test: (_fn, url) => /\/(answers-wait-for|relay-store-gates)\./.test(url) },
  { part: 'credentials (GET /me), views', test: (_fn, url) => /\/(credentials|node-view|item-view|identity-routes|account|same-secret)\./.test(url) },
  { part: 'route wrapper, body reading, text checks', test: (_fn, url) => /\/(item-routes|relay-route|api-route|storable-text|relay-body-parser|plain-json-body|json-body|bounded-input|rate-limit|starlette-routing|security-headers|malformed-request|request-context|http-metrics|query-values)\./.test(url) },
  { part: 'JSON.parse / JSON.stringify (not inside the above)', test: (fn) => fn === 'parse' || fn === 'stringify' },
  { part: 'express and its modules (router, res.json, etag, send)', test: (_fn, url) => /node_modules\/(express|router|body-parser|raw-body|type-is|content-type|etag|send|finalhandler|on-finished|fresh|accepts|negotiator|mime|qs|depd|debug|proxy-addr|statuses|http-errors|iconv-lite|media-typer|parseurl|path-to-regexp|encodeurl|escape-html|vary|cookie|utils-merge|content-disposition|safe-buffer|setprototypeof|bytes|unpipe|destroy|ee-first|forwarded|ipaddr)/.test(url) },
  { part: "Node's HTTP, net and streams", test: (_fn, url) => /node:(_http|http|net|stream|internal\/(streams|http|net|stream_base|js_stream|dtrace|async_hooks|timers|process\/task_queues|event_target|events)|events|buffer)/.test(url) || fn2(url) },
  { part: 'garbage collector', test: (fn) => fn === '(garbage collector)' },
  { part: 'idle (not on the CPU for the relay)', test: (fn) => fn === '(idle)' },
  { part: '(program): V8 and native code outside JavaScript', test: (fn) => fn === '(program)' },
];

function fn2(url: string): boolean {
  return url.startsWith('node:') || url.includes('internal/');
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** µs of profile time per part, and per leaf function (for what `PARTS` leaves as "other"). */
function charge(profile: Profile): { parts: Map<string, number>; leaves: Map<string, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const partOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = partOf.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id) as ProfileNode;
    const { functionName, url } = node.callFrame;
    const found = PARTS.find((p) => p.test(functionName, url))?.part;
    const up = parent.get(id);
    const part = found ?? (up === undefined ? 'other' : resolve(up));
    partOf.set(id, part);
    return part;
  };
  const parts = new Map<string, number>();
  const leaves = new Map<string, number>();
  profile.samples.forEach((id, k) => {
    // timeDeltas[k] is the time before sample k: the time sample k-1 stood for; close enough per sample.
    const us = profile.timeDeltas[k + 1] ?? profile.timeDeltas[k] ?? 0;
    const part = resolve(id);
    parts.set(part, (parts.get(part) ?? 0) + us);
    const f = (byId.get(id) as ProfileNode).callFrame;
    const leaf = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules\/)?/, '')}:${f.lineNumber + 1}`;
    leaves.set(leaf, (leaves.get(leaf) ?? 0) + us);
  });
  return { parts, leaves };
}

/** Counts every SQLite statement the relay runs from now on, by its text (a tool for this profile only). */
function countSqlStatements(on: boolean): Map<string, number> | undefined {
  if (!on) return undefined;
  const counts = new Map<string, number>();
  // Every database's statements share one prototype.
  const db = new Database(':memory:');
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, (...a: unknown[]) => unknown>;
  db.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = proto[method] as (...a: unknown[]) => unknown;
    proto[method] = function (this: { source: string }, ...a: unknown[]) {
      counts.set(this.source, (counts.get(this.source) ?? 0) + 1);
      return original.apply(this, a);
    };
  }
  return counts;
}

function mainThreadCpuMs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    return at >= 0 ? Number(args[at + 1]) : fallback;
  };
  const saveAt = args.indexOf('--save');
  const saveDir = saveAt >= 0 ? args[saveAt + 1] : undefined;
  const perfAt = args.indexOf('--perf-windows');
  const perfWindows = perfAt >= 0 ? args[perfAt + 1] : undefined;
  const voterCount = flag('--voters', 1000);
  const rounds = flag('--rounds', 4);
  const roundSize = flag('--round', 400);
  const clients = flag('--clients', 4);
  const sliceSize = 20;
  const data = tempDataDir('relay-ingest-profile-');
  const keys = Array.from({ length: voterCount }, () => generateNodeKey());
  const ring = keys.map((k) => k.nodeId);
  const stride = Math.max(1, Math.ceil(voterCount / 1000));
  const relayMembers = ring.filter((_, k) => k % stride === 0).sort();
  const selfSlice: QuorumSet = { t: defaultThreshold(relayMembers.length), v: relayMembers, i: [] };
  const syncFile = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
  const relay = await startRelayServer({ clock: systemClock, dataDir: data.dir, selfSlice, syncFile, logger: { info: () => {}, warn: () => {}, error: (m, c) => console.error(m, c) } });
  const client = fork(fileURLToPath(new URL('./relay-load-client.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const session = new Session();
  session.connect();
  try {
    const voters: TestNode[] = [];
    for (let s = 0; s < keys.length; s += 16) voters.push(...(await Promise.all(keys.slice(s, s + 16).map((key) => registerNode(relay, systemClock, { key })))));
    const sliceOf = (k: number): QuorumSet => ({ t: defaultThreshold(sliceSize), v: Array.from({ length: sliceSize }, (_, j) => ring[(k + 1 + j) % voterCount] as string), i: [] });
    // Enough statements for every round: whole items, a vote then an accept per voter.
    const perItem = 2 * voterCount;
    const itemCount = Math.ceil((rounds * roundSize) / perItem) + 1;
    const items: string[] = [];
    for (let k = 0; k < itemCount; k++) items.push(await postClaim(relay, voters[0] as TestNode, { kind: 'statement', title: `profile ${k}`, body: '' }));
    const request = (vote: Vote): LoadRequest => ({ method: 'POST', path: `/items/${vote.item}/vote`, body: JSON.stringify(vote) });
    const statements = items.flatMap((item) => (['vote', 'accept'] as const).flatMap((phase) => voters.map((v, k) => request(voteBy(v, item, 'yes', phase, sliceOf(k), systemClock)))));
    // The first item warms up (JIT, every voter's slice stored): votes only, as the bench's warm-up.
    const warm = statements.slice(0, voterCount);
    const measured = statements.slice(perItem);
    const me: LoadRequest[] = Array.from({ length: roundSize }, (_, k) => ({ method: 'GET', path: '/me', auth: (voters[k % voters.length] as TestNode).auth }));
    const round = (requests: LoadRequest[], expectStatus: number) => runRound(client, { baseUrl: relay.baseUrl, requests, clients, expectStatus });
    await round(me, 200);
    await round(warm, 201);
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 50 });
    const totals = { vote: { cpuMs: 0, loadCpuMs: 0, n: 0, parts: new Map<string, number>(), leaves: new Map<string, number>() }, me: { cpuMs: 0, loadCpuMs: 0, n: 0, parts: new Map<string, number>(), leaves: new Map<string, number>() } };
    const windows: { kind: string; startNs: string; endNs: string; n: number; cpuMs: number }[] = [];
    const profiled = async (kind: 'vote' | 'me', requests: LoadRequest[], expectStatus: number, k: number) => {
      // The requests are sent to the client before the round's CPU time and profile begin (the bench's work, not the relay's).
      const loadingFrom = mainThreadCpuMs();
      await loadRound(client, { baseUrl: relay.baseUrl, requests, clients, expectStatus });
      totals[kind].loadCpuMs += mainThreadCpuMs() - loadingFrom;
      const round = () => runLoadedRound(client);
      if (perfWindows) {
        // For `perf record -k CLOCK_MONOTONIC`: the rounds' windows on the same clock as its samples.
        const startNs = process.hrtime.bigint();
        const before = mainThreadCpuMs();
        await round();
        windows.push({ kind, startNs: String(startNs), endNs: String(process.hrtime.bigint()), n: requests.length, cpuMs: mainThreadCpuMs() - before });
        return;
      }
      await session.post('Profiler.start');
      const before = mainThreadCpuMs();
      await round();
      const cpuMs = mainThreadCpuMs() - before;
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
      if (saveDir) writeFileSync(`${saveDir}/${kind}-${k}.cpuprofile`, JSON.stringify(profile));
      const t = totals[kind];
      t.cpuMs += cpuMs;
      t.n += requests.length;
      const { parts, leaves } = charge(profile);
      for (const [p, us] of parts) t.parts.set(p, (t.parts.get(p) ?? 0) + us);
      for (const [p, us] of leaves) t.leaves.set(p, (t.leaves.get(p) ?? 0) + us);
    };
    const sqlCounts = countSqlStatements(args.includes('--count-sql'));
    for (let k = 0; k < rounds; k++) {
      await profiled('me', me, 200, k);
      await profiled('vote', measured.slice(k * roundSize, (k + 1) * roundSize), 201, k);
    }
    if (sqlCounts) {
      console.log(`SQL statements per request over all rounds (GET /me and votes; ${rounds * roundSize} of each):`);
      for (const [sql, n] of [...sqlCounts.entries()].sort((a, b) => b[1] - a[1])) console.log(`${(n / (rounds * roundSize)).toFixed(2).padStart(6)}  ${sql.replace(/\s+/g, ' ').slice(0, 150)}`);
    }
    if (perfWindows) {
      writeFileSync(perfWindows, JSON.stringify({ pid: process.pid, windows }));
      return;
    }
    const per = (t: { n: number }, us: number) => us / t.n;
    const allParts = [...new Set([...totals.vote.parts.keys(), ...totals.me.parts.keys()])];
    const rows = allParts.map((p) => ({ p, me: per(totals.me, totals.me.parts.get(p) ?? 0), vote: per(totals.vote, totals.vote.parts.get(p) ?? 0) })).sort((a, b) => b.vote - a.vote);
    const sum = (t: typeof totals.me) => [...t.parts.entries()].filter(([p]) => !p.startsWith('idle')).reduce((s, [, us]) => s + us, 0) / t.n;
    console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}; ${voterCount} voters, ${clients} clients, ${rounds} rounds of ${roundSize} each`);
    console.log('| part | GET /me µs | vote µs | vote - GET /me µs |\n|---|---:|---:|---:|');
    for (const r of rows) console.log(`| ${r.p} | ${r.me.toFixed(0)} | ${r.vote.toFixed(0)} | ${(r.vote - r.me).toFixed(0)} |`);
    console.log(`| **profiled, not idle** | ${sum(totals.me).toFixed(0)} | ${sum(totals.vote).toFixed(0)} | ${(sum(totals.vote) - sum(totals.me)).toFixed(0)} |`);
    console.log(`| main thread CPU sending the round to the client (not counted above) | ${((totals.me.loadCpuMs * 1000) / totals.me.n).toFixed(0)} | ${((totals.vote.loadCpuMs * 1000) / totals.vote.n).toFixed(0)} | |`);
    console.log(`| main thread CPU (schedstat) | ${((totals.me.cpuMs * 1000) / totals.me.n).toFixed(0)} | ${((totals.vote.cpuMs * 1000) / totals.vote.n).toFixed(0)} | |`);
    for (const kind of ['vote', 'me'] as const) {
      const t = totals[kind];
      console.log(`\nTop leaf functions, ${kind}, µs per request:`);
      for (const [leaf, us] of [...t.leaves.entries()].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log(`${(us / t.n).toFixed(1).padStart(7)}  ${leaf}`);
    }
  } finally {
    session.disconnect();
    client.kill();
    await relay.close();
    data.remove();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
