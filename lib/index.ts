/**
 * hilbench as a library (docs/library.md): typed clients of the bench and relay HTTP APIs, their
 * errors and answer types, and the scenario runner. `hilbench/vitest` adds a test fixture.
 * Everything exported here follows semver; what is not exported is internal.
 */
export { BenchClient, type BenchClientOptions, type Firmware, type FlashOptions, type UartWait } from '../clients/bench/bench-client.js';
export { BenchSession } from '../clients/bench/bench-session.js';
export type { CallOptions, RetryPolicy } from '../clients/bench/bench-http.js';
export {
  BenchApiError,
  BenchAuthError,
  BenchBusyError,
  BenchNotFoundError,
  BenchRateLimitError,
  BenchTimeoutError,
  BenchUnavailableError,
  BenchValidationError,
  type ValidationIssue,
} from '../clients/bench/bench-errors.js';
export type { AgentRegistration, Board, BoardList, Health, Job, JobState, Session } from '../clients/bench/bench-types.js';
export type { UartEvent } from '../clients/bench/uart-stream.js';
export {
  RelayApiError,
  RelayClient,
  type Bulletin,
  type ItemCreated,
  type ItemDetail,
  type ItemsPage,
  type Me,
  type NodeDetail,
  type RegisterAnswer,
  type RelayClientOptions,
  type RelayHealth,
  type RelayNode,
  type SliceAnswer,
  type VoteAnswer,
} from '../clients/relay/relay-client.js';
export { runScenario, type ScenarioResult, describeFailure } from '../harness/scenario/run-scenario.js';
export { loadScenario, parseScenario } from '../harness/scenario/load-scenario.js';
export { exitCodeOf, jsonReport, junitReport } from '../harness/scenario/scenario-report.js';
export { remoteTarget, type ScenarioTarget } from '../harness/scenario/scenario-target.js';
export { systemClock, type Clock } from '../core/clock.js';
