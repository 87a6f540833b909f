import { describeScenarioFiles } from './scenario-test-helper.js';

// Every scenarios/*.yaml on the in-process bench with the mock backend (instant, deterministic).
describeScenarioFiles({ backend: 'mock' });
