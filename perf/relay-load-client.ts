import { Agent, request } from 'node:http';

/**
 * The outside client of the relay ingest bench (perf/relay-ingest.bench.ts), run as a child
 * process so that it never shares an event loop with the relay it measures. It takes one round at
 * a time over IPC (requests prepared by the parent, a number of clients), sends them on keep-alive
 * connections, one client per connection, and answers how long the round took.
 */
export interface LoadRound {
  baseUrl: string;
  /** Every request of the round; clients take the next one as they finish one. */
  requests: { method: 'GET' | 'POST'; path: string; auth?: string; body?: string }[];
  clients: number;
  /** Status every answer must have. */
  expectStatus: number;
}

export interface LoadResult {
  elapsedMs: number;
  latenciesMs: number[];
  error?: string;
}

async function runRound(round: LoadRound): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: round.clients });
  const latenciesMs: number[] = [];
  let next = 0;
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: round.clients }, async () => {
        for (let k = next++; k < round.requests.length; k = next++) {
          const sent = performance.now();
          const answer = await send(agent, round.baseUrl, round.requests[k] as LoadRound['requests'][number]);
          latenciesMs.push(performance.now() - sent);
          if (answer.status !== round.expectStatus) throw new Error(`${round.requests[k]?.method} ${round.requests[k]?.path} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
        }
      }),
    );
    return { elapsedMs: performance.now() - t0, latenciesMs };
  } catch (error) {
    return { elapsedMs: performance.now() - t0, latenciesMs, error: String(error) };
  } finally {
    agent.destroy();
  }
}

function send(agent: Agent, baseUrl: string, r: LoadRound['requests'][number]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (r.auth) headers.authorization = r.auth;
    if (r.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(r.body));
    }
    const req = request(`${baseUrl}${r.path}`, { method: r.method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

/**
 * What the parent sends: a round to hold (`load`, answered `{ loaded: true }`), then `run`, answered
 * with the `LoadResult`. Two steps, so that the parent's event loop (the relay's) has serialised and
 * sent the round's requests before it starts counting its CPU time for the round: the bodies of
 * 400 votes are about 700 KB of JSON, some 14 µs of the loop per vote that no relay pays.
 */
export type LoadMessage = { kind: 'load'; round: LoadRound } | { kind: 'run' };

let loaded: LoadRound | undefined;
process.on('message', (message: LoadMessage) => {
  if (message.kind === 'load') {
    loaded = message.round;
    process.send?.({ loaded: true });
    return;
  }
  const round = loaded;
  loaded = undefined;
  if (!round) process.send?.({ elapsedMs: 0, latenciesMs: [], error: 'run without a round loaded first' } satisfies LoadResult);
  else void runRound(round).then((result) => process.send?.(result));
});
