/**
 * Test files that need a program from the host (Debian packages), by program. On a machine
 * without it (a newcomer's laptop) vitest leaves these files out and says so at start; CI
 * installs the programs (.ci/run) and sets HILBENCH_REQUIRE_TOOLS=1, so there a missing program
 * makes these files run and fail with the install hint instead of being left out.
 */
export const hostToolSuites: Record<string, { install: string; files: string[]; installedFile?: string }> = {
  'qemu-system-arm': {
    install: 'apt-get install -y qemu-system-arm',
    files: [
      'backends/qemu/qemu-backend.test.ts',
      'backends/qemu/qemu-direct-run.test.ts',
      // A board file's qemu.icount, on a real QEMU (issue 12).
      'backends/qemu/qemu-icount-run.test.ts',
      // The Renode stand-in executes firmware on QEMU (docs/backends/renode.md).
      'backends/renode/renode-backend.test.ts',
      'backends/renode/renode-crash-drain.test.ts',
      'test/fakes/renode-standin/renode-standin.test.ts',
      'test/contract/qemu-lm3s6965evb.contract.test.ts',
      'test/contract/qemu-microbit.contract.test.ts',
      'test/contract/qemu-mps2-an385.contract.test.ts',
      'test/contract/qemu-mps2-an505.contract.test.ts',
      'test/contract/qemu-netduinoplus2.contract.test.ts',
      'test/contract/qemu-stm32vldiscovery.contract.test.ts',
      'test/contract/renode.contract.test.ts',
      'test/integration/every-board-http.test.ts',
      'test/integration/every-board-uart-before-crash.test.ts',
      // hilbench serve on QEMU, killed with SIGKILL mid-job (issue 9).
      'test/integration/crash-recovery.test.ts',
      // A lab in processes: a QEMU worker and a simulator worker (issue 10).
      'test/integration/lab-processes.test.ts',
      // Two replicas on PostgreSQL, a QEMU worker and a simulator worker (issue 10).
      'test/integration/lab-replicas-processes.test.ts',
      // hilbench flash shows QEMU's output live (issue 11).
      'test/integration/flash-live-qemu.test.ts',
      // hilbench run --verbose shows QEMU's output live (issue 11).
      'test/integration/run-verbose-qemu.test.ts',
      // The console's job page streams a QEMU job in a browser (issue 11).
      'test/browser/console-live.test.ts',
      // The packed package's example runs a QEMU board through hilbench/vitest (issue 17).
      'test/package/pack.test.ts',
      // Real GDB on a QEMU board through hilbench debug (issue 32), locally and through a remote worker.
      'test/integration/debug-gdb.test.ts',
      'test/integration/debug-remote.test.ts',
    ],
  },
  // Real GDB in batch mode against hilbench debug (issue 32): Debian's gdb-multiarch for ARM
  // boards; it has no AVR target, so the uno is debugged with gdb-avr's avr-gdb.
  'gdb-multiarch': {
    install: 'apt-get install -y gdb-multiarch',
    files: ['test/integration/debug-gdb.test.ts', 'test/integration/debug-remote.test.ts'],
  },
  'avr-gdb': {
    install: 'apt-get install -y gdb-avr',
    files: ['test/integration/debug-gdb.test.ts', 'test/integration/debug-remote.test.ts'],
  },
  chromium: {
    install: 'apt-get install -y chromium',
    // The pages in a real headless browser through playwright-core (issue 11).
    files: ['test/browser/console-live.test.ts'],
  },
  socat: {
    install: 'apt-get install -y socat',
    // The probe stand-in bench: a socat pty pair plays the board's serial port.
    files: [
      'test/contract/probe.contract.test.ts',
      'test/integration/board-health-probe-fakes.test.ts',
      'test/integration/job-failure-reason-once.test.ts',
      'test/integration/physical-pool-probe-fakes.test.ts',
      'test/integration/probe-automatic-health-check.test.ts',
      'test/integration/probe-fakes.test.ts',
      'test/integration/probe-tool-timeout-and-job-deadline.test.ts',
      'test/integration/run-probe-bench-file.test.ts',
    ],
  },
  // A library, not a program: its presence is a file (firmware/examples/avr/arduino-sketch.ts).
  'arduino-core-avr': {
    install: 'apt-get install -y arduino-core-avr',
    installedFile: '/usr/share/arduino/hardware/arduino/avr/cores/arduino/Arduino.h',
    // Arduino-core sketches built by build.sh and run on the uno simulator (issue 12).
    files: ['firmware/examples/avr/arduino-sketch.test.ts'],
  },
};

/**
 * Test files that need a running PostgreSQL (issue 10): the PostgreSQL store's contract and the
 * replica tests. Left out, loudly, where the server does not answer; required in CI.
 */
export const postgresSuites = {
  install: 'apt-get install -y postgresql && pg_ctlcluster 15 main start && su postgres -c "createuser -s $(whoami)"',
  /** The database the tests connect to in order to create (and drop) one database per test store. */
  defaultBaseUrl: 'postgresql:///postgres?host=/var/run/postgresql',
  files: [
    // The migrated templates test databases are copied from (decision 0830).
    'test/support/postgres-template.test.ts',
    'test/contract/postgres-bench-store.contract.test.ts',
    // Databases of earlier versions open through the one migration runner (decision 0545).
    'test/contract/postgres-bench-migrations.test.ts',
    // Several PostgreSQL stores writing one database at once, with no global lock (decision 0515).
    'test/contract/postgres-stores-racing.test.ts',
    // Two replicas joining one pool's session line at once become visible in order (decision 1030).
    'test/contract/postgres-session-queue-order.test.ts',
    // Both services' PostgreSQL engines: a cut connection, a full disk, a lost checked-out client (decision 0790).
    'test/contract/postgres-engine-faults.contract.test.ts',
    // What the store's caches save PostgreSQL, counted in statements (decision 0600).
    'server/storage/bench/store-caches.test.ts',
    // Statements of a job's steps on each store, counted (decision 0860).
    'server/storage/bench/store-statements.test.ts',
    // A transaction's last statement with its COMMIT, on both executors (decision 0980).
    'server/storage/bench/sql/last-statement.test.ts',
    'test/contract/postgres-pool-lease-model.test.ts',
    'test/integration/replicas-pool-racing.test.ts',
    // A debug job behind two replicas: armed in the store, its streams forwarded to the replica that handed it out (decision 0663).
    'test/integration/debug-replicas.test.ts',
    'server/storage/bench/debug-arming-store.test.ts',
    'server/bench/workers/health-after-lost-commit.test.ts',
    // A job's end heard by a wait on another replica through the lease-freed notification (decision 0650).
    'test/integration/job-watch-across-replicas.test.ts',
    'test/integration/worker-roster-across-replicas.test.ts',
    // A private PostgreSQL cluster stopped and started under load, bench and relay (decision 0516).
    'test/integration/database-restart.test.ts',
    'test/integration/replicas.test.ts',
    'test/integration/bench-hostile-inputs.test.ts',
    'test/integration/lab-replicas-processes.test.ts',
    'test/integration/bench-hostile-lab.test.ts',
    'test/integration/bench-hostile-lab-reports.test.ts',
    'test/integration/local-board-health-through-store.test.ts',
    'test/integration/bench-agent-long-polls.test.ts',
    'test/integration/bench-revoked-worker-health-check.test.ts',
    // The relay's tables on PostgreSQL (decision 0440).
    'test/contract/postgres-relay-store.contract.test.ts',
    // POST /slice/declare's write and its answer in one transaction, on both engines.
    'server/relay/use-cases/slice.test.ts',
    'test/integration/relay-store-replicas.test.ts',
    'test/integration/relay-replicas.test.ts',
    'test/integration/relay-search-index-warning.test.ts',
    // Relay HTTP suites run again on PostgreSQL-backed relays (test/support/relays-on-postgres.ts).
    'test/integration/postgres/relay-credentials.postgres.test.ts',
    'test/integration/postgres/relay-social.postgres.test.ts',
    'test/integration/postgres/relay-peer-health-node-id.postgres.test.ts',
    'test/integration/postgres/relay-events.postgres.test.ts',
    'test/integration/postgres/relay-federation.postgres.test.ts',
    'test/integration/postgres/relay-federation-pull.postgres.test.ts',
    'test/integration/postgres/relay-federation-file-retry.postgres.test.ts',
    'test/integration/postgres/relay-identity.postgres.test.ts',
    'test/integration/postgres/relay-claims.postgres.test.ts',
    'test/integration/postgres/relay-file-items.postgres.test.ts',
    'test/integration/postgres/relay-votes-and-slices.postgres.test.ts',
    'test/integration/postgres/relay-lying-peer.postgres.test.ts',
    'test/integration/postgres/relay-refused-upload-changes-nothing.postgres.test.ts',
    'test/integration/postgres/relay-unstorable-text.postgres.test.ts',
    'test/integration/postgres/relay-reads-never-write.postgres.test.ts',
    'test/integration/postgres/relay-restart.postgres.test.ts',
    // The relay's /metrics: items, nodes and peers read from PostgreSQL when scraped (decision 1060).
    'test/integration/postgres/relay-metrics.postgres.test.ts',
  ],
};

/** Whether `command` is an executable file on `searchPath`. */
export function onPath(command: string, searchPath: string, isExecutable: (file: string) => boolean): boolean {
  return searchPath.split(':').some((dir) => dir !== '' && isExecutable(`${dir}/${command}`));
}
