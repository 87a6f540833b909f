import { describeScenarioFiles } from './scenario-test-helper.js';

// Every scenarios/*.yaml on the sim backend: rp2040js executes the example firmware in process.
describeScenarioFiles({ backend: 'sim' });
// The board-parametrised files again on an AVR board (avr8js).
describeScenarioFiles({ backend: 'sim', patterns: ['device-*.yaml', 'bench-uart-real-firmware.yaml', 'bench-bad-firmware.yaml'], vars: { board: 'uno', foreign: 'pico' } });
