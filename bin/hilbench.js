#!/usr/bin/env node
// `node bin/hilbench.js ...` in a clone: the CLI from the TypeScript sources through tsx (a
// development dependency), without building dist/. `npx hilbench` runs the compiled
// dist/bin/hilbench.js instead (package.json "bin", built by `npm run build`, which `prepare` runs),
// as the installed package and the tests do (decision 0890), and `npm run hilbench` runs
// `tsx bin/hilbench.ts` without this file; ci/nightly-real-boards.test.ts reads the --help pages here.
import { register } from 'tsx/esm/api';

register();
await import('./hilbench.ts');
