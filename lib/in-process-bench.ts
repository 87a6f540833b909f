import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A bench service started in this process for tests: its URL, and how to stop it and remove its data. */
export interface InProcessBench {
  url: string;
  close(): Promise<void>;
}

/**
 * Starts a bench service on 127.0.0.1 (a free port) with its data in a fresh temporary folder,
 * running every board its own simulator or emulator can on this host (`backend` `auto`: the
 * simulators need nothing installed). Loaded only when used: the services stay out of a test
 * run against a remote bench.
 */
export async function startInProcessBench(options: { backend?: 'auto' | 'sim' | 'qemu' | 'mock' } = {}): Promise<InProcessBench> {
  const [{ startBenchServer }, { loadBoardCatalog }, { createBackends }, { systemClock }] = await Promise.all([
    import('../server/bench/start-bench-server.js'),
    import('../boards/catalog.js'),
    import('../harness/backend-registry.js'),
    import('../core/clock.js'),
  ]);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-vitest-'));
  const boards = loadBoardCatalog();
  // Quiet but for errors: a board that cannot run here is refused, with why, when a test asks for it.
  const quiet = { info: () => undefined, warn: () => undefined, error: (m: string, cause?: unknown) => console.error(`hilbench: ${m}`, cause ?? '') };
  try {
    const server = await startBenchServer({
      port: 0,
      dataDir,
      boards,
      clock: systemClock,
      logger: quiet,
      backend: options.backend ?? 'auto',
      backends: () => createBackends({ clock: systemClock, boards }),
    });
    return {
      url: server.url,
      close: async () => {
        await server.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
