import { findExecutable } from '../../backends/process/find-executable.js';
import { describeScenarioFiles } from './scenario-test-helper.js';

// The bench and device scenarios on QEMU (wall-time device, real emulator process) on an MPS2 board.
const qemu = findExecutable('qemu-system-arm');
describeScenarioFiles({
  backend: 'qemu',
  patterns: ['bench-*.yaml', 'device-*.yaml'],
  vars: { board: 'mps2-an385' },
  timeoutMs: 90_000,
  ...(qemu ? {} : { skip: 'qemu-system-arm is not installed' }),
});
