import { createClock } from '@sinonjs/fake-timers';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { createRelayService } from '../../server/relay/relay-service.js';
import { credentialsMarkdown, endpointsMarkdown, limitsMarkdown } from '../../server/relay/routes/relay-site.js';
import { tempDataDir } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

/** docs/relay-api.md carries the tables the service generates; this keeps them in step. */
describe('docs/relay-api.md', () => {
  it('contains the current credential, endpoint and limit tables', async () => {
    const data = tempDataDir();
    const service = await createRelayService({ clock: clockFromFakeTimers(createClock(0)), dataDir: data.dir, baseUrl: 'http://x', humanUrl: 'http://x', logger: memoryLogger() });
    try {
      const doc = readFileSync(new URL('../../docs/relay-api.md', import.meta.url), 'utf8');
      const hint = (fn: string, section: string) => `docs/relay-api.md is out of step with the routes: replace the table under "${section}" with the output of ${fn} (server/relay/routes/relay-site.ts)`;
      expect(doc, hint('credentialsMarkdown(routes)', '## Credentials')).toContain(credentialsMarkdown(service.routes));
      expect(doc, hint('endpointsMarkdown(routes)', '## Endpoints')).toContain(endpointsMarkdown(service.routes));
      expect(doc, hint('limitsMarkdown()', '## Limits')).toContain(limitsMarkdown());
    } finally {
      await service.close();
      data.remove();
    }
  });
});
