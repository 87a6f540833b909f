#!/usr/bin/env node
// The CLI from the TypeScript sources, through tsx (a development dependency): what the tests and
// `npm run hilbench` run in a clone. The installed package's `hilbench` is the compiled
// dist/bin/hilbench.js (package.json "bin"), built by `npm run build` (run by `prepare`).
import { register } from 'tsx/esm/api';

register();
await import('./hilbench.ts');
