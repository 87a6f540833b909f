import { answerWhileStarting, type ListenOptions, listen, listenOptionsOf, type ListeningServer } from '../http/listen.js';
import { type BenchService, type BenchServiceConfig, createBenchService } from './bench-service.js';

export interface StartBenchServerOptions extends Omit<BenchServiceConfig, 'publicBaseUrl' | 'connections'>, Pick<ListenOptions, 'maxConnections' | 'headersTimeoutMs' | 'sendStallTimeoutMs' | 'bodyStallTimeoutMs' | 'minBodyBytesPerSecond'> {
  /** 0 picks a free port (tests). */
  port: number;
  /** The address clients use (pages, llms.txt, OpenAPI `servers`); default the bound address, the port picked for 0 included. */
  publicBaseUrl?: string;
  /** Default 127.0.0.1: exposing the bench is a decision, not a default. */
  host?: string;
}

export interface RunningBenchServer {
  /** e.g. `http://127.0.0.1:41234`. */
  url: string;
  service: BenchService;
  /** Stops accepting connections, then closes the service. */
  close(): Promise<void>;
}

/** What `startBenchServer` builds the service with; tests put a step of their own around it. */
export interface StartBenchServerDeps {
  createService?: (config: BenchServiceConfig) => Promise<BenchService>;
}

/**
 * Listens on `host:port`, then creates the service: its published address defaults to the bound
 * one, so `--port 0` advertises the port it got (it advertised `:0` in llms.txt, ai-plugin.json,
 * the OpenAPI `servers` and the pages), as the relay does. Requests that arrive while it is being
 * created (the database opened, its migrations run) are answered 503 (docs/bench-api.md).
 */
export async function startBenchServer(options: StartBenchServerOptions, deps: StartBenchServerDeps = {}): Promise<RunningBenchServer> {
  const listening: ListeningServer = await listen({ port: options.port, ...listenOptionsOf(options) });
  const starting = answerWhileStarting(listening.server, 'the bench is starting');
  let service: BenchService;
  try {
    service = await (deps.createService ?? createBenchService)({ ...options, publicBaseUrl: options.publicBaseUrl ?? listening.origin, connections: listening.connections });
  } catch (err) {
    await listening.close();
    throw err;
  }
  starting.serve(service);
  return {
    url: listening.origin,
    service,
    close: async () => {
      service.closeUpgrades();
      await listening.close();
      await service.close();
    },
  };
}
