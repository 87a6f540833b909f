import { describeScenarioFiles } from './scenario-test-helper.js';

// Every scenarios/*.yaml on the sim backend: rp2040js and avr8js execute the example firmware in process.
describeScenarioFiles({ backend: 'sim' });
