import { createHash } from 'node:crypto';
import busboy from 'busboy';
import { stringify } from 'yaml';
import type { RecordedExchange } from './recording-proxy.js';

/**
 * Turns a recorded session into a scenario file (docs/scenarios.md, "Recording") that replays on
 * another server and another backend:
 * - secrets never reach the file: bench tokens, relay credentials (HMACs) and bot tokens become
 *   variables captured from the answers that created them (`${agent1.token}`,
 *   `${node1.authorization}`); an admin token becomes `${admin_token}` (pass it with --var);
 *   anything else that looks like a credential becomes `${redacted_N}` and is listed in a warning;
 * - server-assigned ids (sessions, jobs, items, node ids) become captured variables too;
 * - relay signatures cannot be replayed (they name the relay and the time), so registrations and
 *   votes become `create-node` and `vote` steps that sign afresh with new keys;
 * - firmware is stored once by content, `firmware/<sha256>.elf`, beside the scenario file;
 * - job polls collapse into one `wait-job`; pauses of a second or more become `delay` steps.
 */

export interface RecordedFile {
  /** Relative to the scenario file. */
  path: string;
  bytes: Uint8Array;
}

export interface RecordingConversion {
  /** The scenario as YAML text. */
  yaml: string;
  /** Files to write beside it (firmware by sha256). */
  files: RecordedFile[];
  /** Things the converter could not represent faithfully; also written into the file's description. */
  warnings: string[];
}

type Step = Record<string, unknown>;

const MIN_DELAY_MS = 1000;

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

function parseJson(bytes: Uint8Array): unknown {
  if (!bytes.length) return undefined;
  try {
    return JSON.parse(decode(bytes));
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Multipart {
  fields: Record<string, string>;
  files: Record<string, { filename: string; bytes: Uint8Array }>;
}

function parseMultipart(contentType: string, body: Uint8Array): Promise<Multipart> {
  return new Promise((resolve, reject) => {
    const out: Multipart = { fields: {}, files: {} };
    const parser = busboy({ headers: { 'content-type': contentType } });
    parser.on('field', (name, value) => {
      out.fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (c: Buffer) => parts.push(c));
      stream.on('end', () => {
        out.files[name] = { filename: info.filename ?? 'file', bytes: new Uint8Array(Buffer.concat(parts)) };
      });
    });
    parser.on('close', () => resolve(out));
    parser.on('error', reject);
    parser.end(Buffer.from(body));
  });
}

/** Converts `exchanges` (in arrival order) into a scenario. */
export async function scenarioFromRecording(exchanges: readonly RecordedExchange[], options: { name: string; description?: string }): Promise<RecordingConversion> {
  const steps: Step[] = [];
  const files = new Map<string, Uint8Array>();
  const warnings: string[] = [];
  /** Literal secret or id -> its `${...}` spelling; longest first when applied. */
  const replacements = new Map<string, string>();
  const counters = new Map<string, number>();
  const nextName = (prefix: string) => {
    const n = (counters.get(prefix) ?? 0) + 1;
    counters.set(prefix, n);
    return `${prefix}${n}`;
  };
  /** Relay credential header value -> node variable, to know who posts and votes. */
  const nodeByAuth = new Map<string, string>();
  const nodeById = new Map<string, string>();
  const boards = new Set<string>();
  let lastAtMs: number | undefined;

  const subst = (text: string): string => {
    let out = text;
    for (const [literal, expr] of [...replacements].sort((a, b) => b[0].length - a[0].length)) out = out.split(literal).join(expr);
    return out;
  };
  const substDeep = (value: unknown): unknown => {
    if (typeof value === 'string') return subst(value);
    if (Array.isArray(value)) return value.map(substDeep);
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substDeep(v)]));
    return value;
  };
  const remember = (literal: unknown, expr: string) => {
    if (typeof literal === 'string' && literal.length >= 6) replacements.set(literal, expr);
  };
  const bearer = (ex: RecordedExchange) => {
    const auth = ex.requestHeaders.authorization;
    return auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
  };
  const tokenExpr = (ex: RecordedExchange): string | undefined => {
    const token = bearer(ex);
    return token === undefined ? undefined : subst(token);
  };
  const statusExpect = (ex: RecordedExchange, more: Record<string, unknown> = {}) =>
    ex.status >= 200 && ex.status < 300 && !Object.keys(more).length ? undefined : { ...(ex.status >= 200 && ex.status < 300 ? {} : { status: ex.status }), ...(Object.keys(more).length ? { json: more } : {}) };
  const withExpect = (body: Step, ex: RecordedExchange, more: Record<string, unknown> = {}): Step => {
    const expect = statusExpect(ex, more);
    return expect ? { ...body, expect } : body;
  };
  const push = (ex: RecordedExchange, step: Step) => {
    if (lastAtMs !== undefined && ex.atMs - lastAtMs >= MIN_DELAY_MS) {
      steps.push({ delay: `${Math.floor((ex.atMs - lastAtMs) / 100) * 100}ms` });
    }
    steps.push(step);
  };

  for (const ex of exchanges) {
    const reqJson = parseJson(ex.requestBody);
    const resJson = parseJson(ex.responseBody);
    const ok = ex.status >= 200 && ex.status < 300;
    const res = isObject(resJson) ? resJson : {};
    const contentType = ex.requestHeaders['content-type'] ?? '';
    const form = contentType.startsWith('application/x-www-form-urlencoded') ? Object.fromEntries(new URLSearchParams(decode(ex.requestBody))) : undefined;
    // Ids come from the path without its query: an agent reads a job with `?wait=` (bench-api.md).
    const pathOnly = ex.path.split('?')[0] as string;
    const route = `${ex.method} ${pathOnly}`;
    let step: Step | undefined;
    let poll = false;
    /** Recognised but not representable (a warning says why): no raw fallback either. */
    let leftOut = false;

    if (ex.service === 'bench') {
      const sessionMatch = /^\/api\/v1\/sessions\/([^/]+)(\/heartbeat|\/end)?$/.exec(pathOnly);
      const jobMatch = /^\/api\/v1\/jobs\/([^/]+)$/.exec(pathOnly);
      if (route === 'POST /api/v1/agents/register') {
        const as = ok ? nextName('agent') : undefined;
        step = { register: withExpect({ ...(form?.label ? { label: form.label } : {}), ...(as ? { as } : {}) }, ex) };
        if (as) {
          remember(res.token, `\${${as}.token}`);
          remember(res.agent_id, `\${${as}.agent_id}`);
        }
      } else if (route === 'POST /api/v1/sessions' && form && tokenExpr(ex) !== undefined) {
        const as = ok ? nextName('session') : undefined;
        if (form.board) boards.add(form.board);
        step = {
          'open-session': withExpect(
            { token: tokenExpr(ex), ...(form.board ? { board: form.board } : {}), ...(form.idle_seconds ? { 'idle-seconds': numeric(form.idle_seconds) } : {}), ...(as ? { as } : {}) },
            ex,
            ok ? { state: res.state } : {},
          ),
        };
        if (as) {
          remember(res.session_id, `\${${as}.session_id}`);
          // Absolute times differ on replay; a scenario compares them through the captured answer.
          remember(res.expires_at, `\${${as}.expires_at}`);
        }
      } else if (sessionMatch && tokenExpr(ex) !== undefined && ((ex.method === 'GET' && !sessionMatch[2]) || (ex.method === 'POST' && sessionMatch[2]))) {
        const kind = sessionMatch[2] === '/heartbeat' ? 'heartbeat' : sessionMatch[2] === '/end' ? 'end-session' : 'get-session';
        step = { [kind]: withExpect({ token: tokenExpr(ex), session: subst(decodeURIComponent(sessionMatch[1] as string)) }, ex, ok ? { state: res.state } : {}) };
      } else if (route === 'POST /api/v1/jobs/flash' && contentType.startsWith('multipart/form-data')) {
        const parts = await parseMultipart(contentType, ex.requestBody);
        const firmware = parts.files.firmware;
        if (firmware) {
          const sha = createHash('sha256').update(firmware.bytes).digest('hex');
          const file = `firmware/${sha}.elf`;
          files.set(file, firmware.bytes);
          const as = ok ? nextName('job') : undefined;
          if (parts.fields.board) boards.add(parts.fields.board);
          step = {
            flash: withExpect(
              {
                ...(tokenExpr(ex) !== undefined ? { token: tokenExpr(ex) } : {}),
                ...(parts.fields.board ? { board: parts.fields.board } : {}),
                firmware: file,
                ...(parts.fields.uart_seconds ? { 'uart-seconds': numeric(parts.fields.uart_seconds) } : {}),
                ...(parts.fields.session ? { session: subst(parts.fields.session) } : {}),
                ...(as ? { as } : {}),
              },
              ex,
            ),
          };
          if (as) remember(res.job_id, `\${${as}.job_id}`);
        }
      } else if (jobMatch && ex.method === 'GET' && tokenExpr(ex) !== undefined) {
        if (ok && (res.state === 'done' || res.state === 'failed')) {
          // The UART text depends on the backend (mock transcript vs. real output): only the outcome is kept.
          step = { 'wait-job': { token: tokenExpr(ex), job: subst(decodeURIComponent(jobMatch[1] as string)), state: res.state, timeout: '60s' } };
        } else if (ok) poll = true;
      }
    } else {
      const voteMatch = /^\/items\/([^/]+)\/vote$/.exec(pathOnly);
      const bulletinMatch = /^\/items\/([^/]+)\/bulletin\/([^/]+)$/.exec(pathOnly);
      if (route === 'POST /register' && isObject(reqJson) && reqJson.schema === 'x.register/1' && ok) {
        const as = nextName('node');
        step = { 'create-node': { as, ...(typeof reqJson.name === 'string' ? { name: reqJson.name } : {}) } };
        if (typeof reqJson.node_id === 'string') nodeById.set(reqJson.node_id, as);
        if (typeof res.authorization === 'string') nodeByAuth.set(res.authorization, as);
        remember(res.authorization, `\${${as}.authorization}`);
        remember(res.credential, `\${${as}.credential}`);
        remember(reqJson.node_id, `\${${as}.node_id}`);
      } else if (route === 'GET /health' && ok && typeof res.node_id === 'string') {
        // The relay's own node id and address differ on another relay: capture them.
        const as = nextName('relay');
        step = { http: { service: 'relay', method: 'GET', path: ex.path, as, expect: { status: ex.status } } };
        remember(res.node_id, `\${${as}.node_id}`);
        remember(res.base_url, `\${${as}.base_url}`);
      } else if (route === 'POST /session' && ok) {
        // Signing in answers the credential the node already has: nothing to replay.
        step = undefined;
      } else if (route === 'POST /items' && isObject(reqJson) && ex.requestHeaders.authorization && nodeByAuth.has(ex.requestHeaders.authorization)) {
        const as = ok ? nextName('item') : undefined;
        step = {
          'post-item': withExpect(
            { node: nodeByAuth.get(ex.requestHeaders.authorization), kind: reqJson.kind, title: reqJson.title, ...(typeof reqJson.body === 'string' && reqJson.body ? { body: reqJson.body } : {}), ...(as ? { as } : {}) },
            ex,
          ),
        };
        if (as) remember(res.id, `\${${as}.id}`);
      } else if (voteMatch && ex.method === 'POST' && isObject(reqJson) && typeof reqJson.voter === 'string' && nodeById.has(reqJson.voter)) {
        const slice = isObject(reqJson.slice) ? reqJson.slice : undefined;
        if (!slice || (Array.isArray(slice.i) && slice.i.length > 0)) {
          warnings.push(`a vote by ${nodeById.get(reqJson.voter)} with ${slice ? 'a nested slice' : 'a slice_hash'} cannot be re-signed by a scenario step; it was left out`);
          leftOut = true;
        } else {
          step = {
            vote: withExpect(
              {
                node: nodeById.get(reqJson.voter),
                item: subst(String(reqJson.item)),
                value: reqJson.value,
                phase: reqJson.phase,
                slice: { t: slice.t, v: (slice.v as string[]).map(subst) },
              },
              ex,
            ),
          };
        }
      } else if (bulletinMatch && ex.method === 'GET' && ok && typeof res.state === 'string') {
        step = { 'expect-bulletin': { item: subst(bulletinMatch[1] as string), node: subst(bulletinMatch[2] as string), state: res.state, timeout: '5s' } };
      }
    }

    if (step === undefined && !poll && !leftOut && !(ex.service === 'relay' && route === 'POST /session' && ok)) {
      step = await rawStep(ex, { subst, substDeep, nextName, remember, warnings, files, form, reqJson, resJson, contentType });
    }
    if (step) push(ex, step);
    lastAtMs = ex.atMs;
  }

  const board = boards.size === 1 ? [...boards][0] : undefined;
  const doc: Record<string, unknown> = {
    version: 1,
    name: options.name,
    description: [options.description ?? 'Recorded by hilbench record.', ...warnings.map((w) => `Warning: ${w}`)].join('\n'),
    clock: 'simulated',
    // A variable, as the repository's files have it: `--var board=...` retargets the recording.
    ...(board ? { board: '${board}', vars: { board } } : {}),
    steps: board ? steps.map((s) => dropBoard(s, board)) : steps,
  };
  let yaml = stringify(doc, { lineWidth: 0 });
  // Safety net: nothing shaped like a credential may survive into the file.
  const leftovers = [/hb_[A-Za-z0-9_-]{20,}/g, /xrb_[A-Za-z0-9_-]{20,}/g, /\b[0-9a-f]{64}\.[0-9a-f]{64}\b/g];
  let redacted = 0;
  for (const pattern of leftovers) {
    yaml = yaml.replace(pattern, () => `\${redacted_${++redacted}}`);
  }
  if (redacted) {
    warnings.push(`${redacted} credential-like value(s) had no capturing step and were replaced by \${redacted_N}; set them with --var`);
    yaml = `# ${warnings[warnings.length - 1]}\n${yaml}`;
  }
  return { yaml, files: [...files].map(([path, bytes]) => ({ path, bytes })), warnings };
}

function dropBoard(step: Step, board: string): Step {
  const [[kind, body]] = Object.entries(step) as [[string, unknown]];
  if (isObject(body) && body.board === board) {
    const { board: _board, ...rest } = body;
    return { [kind]: rest };
  }
  return step;
}

async function rawStep(
  ex: RecordedExchange,
  h: {
    subst: (s: string) => string;
    substDeep: (v: unknown) => unknown;
    nextName: (p: string) => string;
    remember: (literal: unknown, expr: string) => void;
    warnings: string[];
    files: Map<string, Uint8Array>;
    form: Record<string, string> | undefined;
    reqJson: unknown;
    resJson: unknown;
    contentType: string;
  },
): Promise<Step> {
  const headers: Record<string, string> = {};
  const auth = ex.requestHeaders.authorization;
  if (auth !== undefined) headers.authorization = h.subst(auth);
  if (ex.requestHeaders['x-admin-token'] !== undefined) headers['x-admin-token'] = '${admin_token}';
  const body: Step = { ...(ex.service === 'relay' ? { service: 'relay' } : {}), method: ex.method, path: h.subst(ex.path) };
  if (h.form) body.form = h.substDeep(h.form);
  else if (h.contentType.includes('json') && h.reqJson !== undefined) body.json = h.substDeep(h.reqJson);
  else if (h.contentType.startsWith('multipart/form-data')) {
    const parts = await parseMultipart(h.contentType, ex.requestBody);
    const multipart: Record<string, unknown> = { ...(h.substDeep(parts.fields) as Record<string, string>) };
    for (const [field, file] of Object.entries(parts.files)) {
      const path = `files/${createHash('sha256').update(file.bytes).digest('hex')}`;
      h.files.set(path, file.bytes);
      multipart[field] = { file: path, filename: file.filename };
    }
    body.multipart = multipart;
  } else if (ex.requestBody.length) {
    body.body = h.subst(decode(ex.requestBody));
    if (h.contentType) headers['content-type'] = h.contentType;
  }
  if (Object.keys(headers).length) body.headers = headers;
  // Secrets created by a raw request (a bot's token) are captured like the others.
  const res = isObject(h.resJson) ? h.resJson : {};
  const ok = ex.status >= 200 && ex.status < 300;
  if (ok && (typeof res.token === 'string' || typeof res.authorization === 'string')) {
    const as = h.nextName('secret');
    body.as = as;
    h.remember(res.authorization, `\${${as}.authorization}`);
    h.remember(res.token, `\${${as}.token}`);
  }
  // A server-assigned id (an item posted with a bot token, which no post-item step can sign) is
  // captured too: later requests name it, and it differs on replay.
  if (ok && ex.method === 'POST' && typeof res.id === 'string') {
    const as = (body.as as string | undefined) ?? h.nextName(ex.service === 'relay' && ex.method === 'POST' && ex.path.split('?')[0] === '/items' ? 'item' : 'answer');
    body.as = as;
    h.remember(res.id, `\${${as}.id}`);
  }
  body.expect = { status: ex.status };
  return { http: body };
}

/** A form's number as a YAML number when it is one (`90`, `0.8`), else the text as sent. */
function numeric(text: string): number | string {
  return /^[0-9]+(?:\.[0-9]+)?$/.test(text) ? Number(text) : text;
}
