export {
  type BackendChoice,
  healthBackendOf,
  type ResolvedBoard,
  resolveBoardBackend,
  resolveBoardBackends,
} from '../../harness/board-resolution.js';
