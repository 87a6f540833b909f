import { type ListenOptions, listen, listenOptionsOf, type ListeningServer } from '../http/listen.js';
import { type BenchService, type BenchServiceConfig, createBenchService } from './bench-service.js';

export interface StartBenchServerOptions extends BenchServiceConfig, Pick<ListenOptions, 'maxConnections' | 'headersTimeoutMs' | 'sendStallTimeoutMs'> {
  /** 0 picks a free port (tests). */
  port: number;
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

/** Creates the service and listens on `host:port`. */
export async function startBenchServer(options: StartBenchServerOptions): Promise<RunningBenchServer> {
  const service = await createBenchService(options);
  let listening: ListeningServer;
  try {
    listening = await listen({ port: options.port, ...listenOptionsOf(options) });
  } catch (err) {
    await service.close();
    throw err;
  }
  // Without a listener node writes `100 Continue` to every `Expect: 100-continue` at once.
  listening.server.on('checkContinue', service.checkContinue);
  listening.server.on('request', service.app);
  listening.server.on('upgrade', service.upgrade);
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
