import { describe, expect, it } from 'vitest';
import { parseScenario } from './load-scenario.js';
import type { RecordedExchange } from './recording-proxy.js';
import { scenarioFromRecording } from './scenario-from-recording.js';

const enc = (s: string) => new TextEncoder().encode(s);
const TOKEN = `hb_${'A'.repeat(43)}`;
const NODE = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const RELAY = 'f'.repeat(64);
const CRED = `${NODE}.${'c'.repeat(64)}`;

function ex(partial: Partial<RecordedExchange> & { json?: unknown; answer?: unknown }): RecordedExchange {
  const { json, answer, ...rest } = partial;
  return {
    atMs: 0,
    service: 'bench',
    method: 'GET',
    path: '/',
    requestHeaders: json === undefined ? {} : { 'content-type': 'application/json' },
    requestBody: enc(json === undefined ? '' : JSON.stringify(json)),
    status: 200,
    responseHeaders: { 'content-type': 'application/json' },
    responseBody: enc(answer === undefined ? '' : JSON.stringify(answer)),
    ...rest,
  };
}

describe('scenarioFromRecording', () => {
  it('redacts a token no step created, and says so', async () => {
    const { yaml, warnings } = await scenarioFromRecording(
      [ex({ method: 'GET', path: '/api/v1/boards', requestHeaders: { authorization: `Bearer ${TOKEN}` }, answer: { boards: [] } })],
      { name: 'stray token' },
    );
    expect(yaml).not.toContain(TOKEN);
    expect(yaml).toContain('${redacted_1}');
    expect(warnings).toEqual([expect.stringMatching(/1 credential-like value\(s\) had no capturing step/)]);
    expect(() => parseScenario(yaml, 'x.yaml')).not.toThrow();
  });

  it('the admin token becomes ${admin_token}', async () => {
    const { yaml } = await scenarioFromRecording([ex({ path: '/admin', requestHeaders: { 'x-admin-token': 'very-secret-admin' }, answer: {} })], { name: 'admin' });
    expect(yaml).not.toContain('very-secret-admin');
    expect(yaml).toContain('x-admin-token: ${admin_token}');
  });

  it('maps relay nodes, items and votes to re-signing steps; a nested slice is left out with a warning', async () => {
    const item = 'd'.repeat(64);
    const { yaml, warnings } = await scenarioFromRecording(
      [
        ex({ service: 'relay', path: '/health', answer: { status: 'ok', node_id: RELAY, base_url: 'http://127.0.0.1:9999' } }),
        ex({ service: 'relay', method: 'POST', path: '/register', json: { schema: 'x.register/1', node_id: NODE, name: 'n' }, status: 201, answer: { node_id: NODE, credential: CRED, authorization: `Bearer ${CRED}` } }),
        ex({ service: 'relay', method: 'POST', path: '/register', json: { schema: 'x.register/1', node_id: OTHER }, status: 201, answer: { node_id: OTHER, credential: `${OTHER}.${'e'.repeat(64)}`, authorization: `Bearer ${OTHER}.${'e'.repeat(64)}` } }),
        ex({ service: 'relay', method: 'POST', path: '/items', requestHeaders: { 'content-type': 'application/json', authorization: `Bearer ${CRED}` }, requestBody: enc(JSON.stringify({ kind: 'statement', title: 't', body: '' })), status: 201, answer: { id: item } }),
        ex({ service: 'relay', method: 'POST', path: `/items/${item}/vote`, json: { voter: NODE, item, value: 'yes', phase: 'vote', slice: { t: 1, v: [OTHER], i: [] } }, status: 201, answer: {} }),
        ex({ service: 'relay', method: 'POST', path: `/items/${item}/vote`, json: { voter: OTHER, item, value: 'yes', phase: 'vote', slice: { t: 1, v: [], i: [{ t: 1, v: [NODE], i: [] }] } }, status: 201, answer: {} }),
        ex({ service: 'relay', method: 'GET', path: `/items/${item}/bulletin/${NODE}`, answer: { state: 'voted' } }),
        // A query string (a client's cache-buster) does not hide the route, as on the bench side.
        ex({ service: 'relay', method: 'GET', path: `/items/${item}/bulletin/${RELAY}?fresh=1`, answer: { state: 'uncommitted' } }),
      ],
      { name: 'relay' },
    );
    for (const secret of [NODE, OTHER, CRED, item, RELAY]) expect(yaml).not.toContain(secret);
    const s = parseScenario(yaml, 'x.yaml');
    expect(s.steps.map((x) => x.kind)).toEqual(['http', 'create-node', 'create-node', 'post-item', 'vote', 'expect-bulletin', 'expect-bulletin']);
    expect(s.steps[6]).toMatchObject({ body: { node: '${relay1.node_id}', state: 'uncommitted' } });
    s.steps.shift();
    expect(s.steps[3]).toMatchObject({ body: { node: 'node1', item: '${item1.id}', value: 'yes', phase: 'vote', slice: { t: 1, v: ['${node2.node_id}'] } } });
    expect(s.steps[4]).toMatchObject({ body: { item: '${item1.id}', node: '${node1.node_id}', state: 'voted' } });
    expect(warnings).toEqual([expect.stringMatching(/a vote by node2 with a nested slice cannot be re-signed/)]);
    expect(s.description).toContain('Warning: a vote by node2');
  });

  it('keeps pauses of a second or more as delays, and drops the time spent polling a job', async () => {
    const { yaml } = await scenarioFromRecording(
      [
        ex({ atMs: 0, method: 'POST', path: '/api/v1/agents/register', requestHeaders: { 'content-type': 'application/x-www-form-urlencoded' }, requestBody: enc('label=a'), answer: { agent_id: 'ag_x', token: TOKEN } }),
        ex({ atMs: 1500, path: '/api/v1/jobs/job_1', requestHeaders: { authorization: `Bearer ${TOKEN}` }, answer: { state: 'running' } }),
        ex({ atMs: 1900, path: '/api/v1/jobs/job_1', requestHeaders: { authorization: `Bearer ${TOKEN}` }, answer: { state: 'done' } }),
        ex({ atMs: 2100, path: '/api/v1/boards', answer: {} }),
      ],
      { name: 'gaps' },
    );
    const s = parseScenario(yaml, 'x.yaml');
    expect(s.steps.map((x) => x.kind)).toEqual(['register', 'wait-job', 'http']);
    const withPause = await scenarioFromRecording(
      [ex({ atMs: 0, path: '/api/v1/boards', answer: {} }), ex({ atMs: 91_234, path: '/api/v1/boards', answer: {} })],
      { name: 'pause' },
    );
    expect(parseScenario(withPause.yaml, 'x.yaml').steps.map((x) => (x.kind === 'delay' ? x.body : x.kind))).toEqual(['http', '91200ms', 'http']);
  });

  it('takes the job and session ids from the path without its query (a job read with ?wait=, as the README does)', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const { yaml } = await scenarioFromRecording(
      [
        ex({ method: 'POST', path: '/api/v1/agents/register', requestHeaders: { 'content-type': 'application/x-www-form-urlencoded' }, requestBody: enc('label=a'), answer: { agent_id: 'ag_x', token: TOKEN } }),
        ex({ method: 'POST', path: '/api/v1/sessions', requestHeaders: { 'content-type': 'application/x-www-form-urlencoded', ...auth }, requestBody: enc('board=pico'), answer: { session_id: 'ses_recorded1', state: 'active' } }),
        ex({ path: '/api/v1/sessions/ses_recorded1?fresh=1', requestHeaders: auth, answer: { session_id: 'ses_recorded1', state: 'active' } }),
        ex({ path: '/api/v1/jobs/job_recorded1?wait=30', requestHeaders: auth, answer: { job_id: 'job_recorded1', state: 'done' } }),
      ],
      { name: 'waits' },
    );
    const s = parseScenario(yaml, 'x.yaml');
    expect(s.steps.map((x) => x.kind)).toEqual(['register', 'open-session', 'get-session', 'wait-job']);
    expect(s.steps[2]).toMatchObject({ body: { session: '${session1.session_id}' } });
    expect(s.steps[3]).toMatchObject({ body: { job: 'job_recorded1', state: 'done' } });
  });
});

describe('scenarioFromRecording', () => {
  it('writes the board as ${board} with vars {board}, so --var board= retargets the recording', async () => {
    const { yaml } = await scenarioFromRecording(
      [
        ex({ method: 'POST', path: '/api/v1/agents/register', requestHeaders: { 'content-type': 'application/x-www-form-urlencoded' }, requestBody: enc('label=a'), answer: { agent_id: 'agent-123456', label: 'a', token: TOKEN } }),
        ex({ method: 'POST', path: '/api/v1/sessions', requestHeaders: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${TOKEN}` }, requestBody: enc('board=pico'), answer: { session_id: 'session-123456', board: 'pico', state: 'active', expires_at: '2026-01-01T00:01:30.000Z' } }),
      ],
      { name: 'board' },
    );
    const scenario = parseScenario(yaml, 'x.yaml');
    expect(scenario.board).toBe('${board}');
    expect(scenario.vars).toEqual({ board: 'pico' });
    expect(scenario.steps[1]).toMatchObject({ kind: 'open-session', body: { token: '${agent1.token}' } });
    expect((scenario.steps[1]?.body as { board?: string }).board).toBeUndefined();
  });

  it('captures the id of an item posted with a bot token and uses it in later requests', async () => {
    const item = 'd'.repeat(64);
    const BOT = `Bot xrb_${'B'.repeat(43)}`;
    const { yaml } = await scenarioFromRecording(
      [
        ex({ service: 'relay', method: 'POST', path: '/register', json: { schema: 'x.register/1', node_id: NODE }, status: 201, answer: { node_id: NODE, credential: CRED, authorization: `Bearer ${CRED}` } }),
        ex({ service: 'relay', method: 'POST', path: '/bots', requestHeaders: { 'content-type': 'application/json', authorization: `Bearer ${CRED}` }, requestBody: enc(JSON.stringify({ name: 'helper' })), status: 201, answer: { name: 'helper', token: BOT.slice(4), authorization: BOT } }),
        ex({ service: 'relay', method: 'POST', path: '/items', requestHeaders: { 'content-type': 'application/json', authorization: BOT }, requestBody: enc(JSON.stringify({ kind: 'statement', title: 'by a bot', body: '' })), status: 201, answer: { id: item, author: NODE } }),
        ex({ service: 'relay', method: 'GET', path: `/items/${item}`, answer: { id: item } }),
      ],
      { name: 'bot item' },
    );
    expect(yaml).not.toContain(item);
    const scenario = parseScenario(yaml, 'x.yaml');
    expect(scenario.steps[2]).toMatchObject({ kind: 'http', body: { method: 'POST', path: '/items', as: 'item1', headers: { authorization: '${secret1.authorization}' } } });
    expect(scenario.steps[3]).toMatchObject({ kind: 'http', body: { method: 'GET', path: '/items/${item1.id}' } });
    expect((scenario.steps[3]?.body as { as?: string }).as).toBeUndefined();
  });
});
