import { z } from 'zod';

/**
 * The scenario file format, version 1 (docs/scenarios.md). One zod schema per step command; the
 * loader validates a file whole with them before the first step runs, and
 * `scenarios/schema.json` is generated from `scenarioJsonSchema()` (harness/scenario/write-schema.ts).
 *
 * Step names follow wokwi-cli's TestScenario where the meaning is the same (`wait-serial`,
 * `write-serial`, `delay`, `expect-pin`, `set-control`); everything else is ours.
 */

export const SCENARIO_VERSION = 1;

/** Which clock a wait is measured on. `simulated`: time the runner drives (the fake host clock of an in-process server, the device's own time base); `wall`: real host time. */
export const clockKinds = ['simulated', 'wall'] as const;
export type ClockKind = (typeof clockKinds)[number];

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration: a number (milliseconds) or text with a unit (`500ms`, `1.5s`, `2m`, `1h`). */
export function durationMs(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = DURATION.exec(value.trim());
  if (!match) throw new Error(`not a duration: ${JSON.stringify(value)}`);
  return Number(match[1]) * (unitMs[match[2] as string] as number);
}

export const durationSchema = z
  .union([z.number().nonnegative().finite(), z.string().regex(DURATION, 'expected a duration such as 500ms, 1.5s, 2m or 1h (a bare number is milliseconds)')])
  .describe('a duration: milliseconds as a number, or text with a unit: 500ms, 1.5s, 2m, 1h');

const clockSchema = z.enum(clockKinds).describe('which clock this wait is measured on (default: the file-level clock)');
const waitFields = {
  timeout: durationSchema.optional().describe('how long to wait at most (default: the file-level timeout)'),
  clock: clockSchema.optional(),
};

/** A text expectation: exact substring, a regular expression, either negated. */
const textMatchFields = {
  text: z.string().min(1).optional().describe('a substring to find'),
  regex: z.string().min(1).optional().describe('a JavaScript regular expression (no flags; use (?i) style alternatives by hand)'),
  not: z.boolean().optional().describe('true: the text must NOT appear (for the whole timeout, for waits)'),
};

/**
 * What an HTTP answer must look like. `json` is a subset match: objects may carry more keys, arrays
 * must match element by element. `json-exact` must match exactly. Inside both, `{"$regex": "..."}`
 * matches a string, `{"$not": X}` anything that does not match X, `{"$contains": X}` an array with an
 * element matching X, `{"$exists": false}` an absent key (subset mode).
 */
export const expectSchema = z
  .strictObject({
    status: z.union([z.number().int().min(100).max(599), z.array(z.number().int().min(100).max(599)).min(1)]).optional().describe('expected status (or any of a list); default: any 2xx'),
    json: z.unknown().optional().describe('subset match on the JSON body'),
    'json-exact': z.unknown().optional().describe('exact match on the JSON body'),
    ...textMatchFields,
    headers: z.record(z.string(), z.string()).optional().describe('headers that must be present with these values (names lower-case)'),
  })
  .describe('expectations on an HTTP answer');
export type ResponseExpect = z.infer<typeof expectSchema>;

const varName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'a variable name: letters, digits, _ and -, not starting with a digit');
const asField = varName.optional().describe('store the JSON answer under this name: ${name.field} then reads it');
const captureField = z
  .record(varName, z.string().min(1))
  .optional()
  .describe('capture values from the JSON answer: {name: "dotted.path"}, then ${name}');
/** How long one request may take, in real host time; the file-level timeout when absent. */
const requestTimeout = durationSchema.optional().describe('how long each request may take until its whole answer is read, in real time (default: the file-level timeout)');
const answerFields = { as: asField, capture: captureField, expect: expectSchema.optional(), timeout: requestTimeout };

/** A number (or its decimal text, as a recording has it), or one `${...}` variable holding it (checked by the server once substituted). */
const numberOrVariable = z
  .union([z.number(), z.string().regex(/^(?:\$\{[^}]+\}|[0-9]+(?:\.[0-9]+)?)$/, 'expected a number or one ${variable}')])
  .describe('a number, or one ${variable} holding it');

/** A value substituted with `${...}` before use. */
const text = z.string();
const board = z.string().min(1).optional().describe('board id (default: the file-level board)');

const byteList = z.array(z.number().int().min(0).max(255)).min(1).describe('bytes, each 0-255');

/** Wokwi's pin steps: `name`, or `pin` as Wokwi's own alias of it (one of the two). */
const pinBody = z
  .strictObject({ 'part-id': z.string().optional(), name: z.string().min(1).optional(), pin: z.string().min(1).optional(), value: z.union([z.number(), z.boolean()]) })
  .refine((b) => (b.name === undefined) !== (b.pin === undefined), { message: 'give name (or its alias pin), one of them' })
  .transform(({ pin, ...rest }) => ({ ...rest, name: (rest.name ?? pin) as string }));

export const stepBodies = {
  // ---- bench service: agent sessions (docs/bench-api.md)
  register: z.strictObject({ label: text.optional(), ...answerFields }).describe('POST /api/v1/agents/register; the answer has agent_id and token'),
  'open-session': z
    .strictObject({ token: text, board, 'idle-seconds': numberOrVariable.optional(), ...answerFields })
    .describe('POST /api/v1/sessions'),
  'get-session': z.strictObject({ token: text, session: text, ...answerFields }).describe('GET /api/v1/sessions/{session}'),
  heartbeat: z.strictObject({ token: text, session: text, ...answerFields }).describe('POST /api/v1/sessions/{session}/heartbeat'),
  'end-session': z.strictObject({ token: text, session: text, ...answerFields }).describe('POST /api/v1/sessions/{session}/end'),
  flash: z
    .strictObject({
      token: text.optional().describe('bearer token; omit to send no Authorization header'),
      board,
      firmware: text.describe('firmware file, relative to the scenario file'),
      'uart-seconds': numberOrVariable.optional(),
      session: text.optional(),
      ...answerFields,
    })
    .describe('POST /api/v1/jobs/flash (multipart); answers the job record, state queued'),
  'wait-job': z
    .strictObject({
      token: text,
      job: text,
      state: z.enum(['done', 'failed']).optional().describe('the final state expected (default done)'),
      poll: durationSchema.optional().describe('poll interval (default 50ms)'),
      ...waitFields,
      ...answerFields,
    })
    .describe('polls GET /api/v1/jobs/{job} until done or failed; expectations apply to the final record'),

  // ---- relay service (docs/relay-api.md)
  'create-node': z
    .strictObject({ as: varName.describe('${as.node_id} and ${as.authorization} afterwards'), name: text.optional(), expect: expectSchema.optional(), timeout: requestTimeout })
    .describe('makes an Ed25519 node key and registers it (POST /register, a signed x.register/1 document)'),
  'post-item': z
    .strictObject({ node: varName.describe('a node made by create-node'), kind: text, title: text, body: text.optional(), ...answerFields })
    .describe('POST /items with a claim; the answer has id'),
  vote: z
    .strictObject({
      node: varName.describe('the voter, made by create-node'),
      item: text,
      value: z.enum(['yes', 'no']),
      phase: z.enum(['vote', 'accept', 'confirm']).optional().describe('default vote'),
      slice: z
        .strictObject({ t: z.number().int().positive().optional().describe('threshold (default 67 %)'), v: z.array(text).min(1).describe('validator node ids') })
        .describe("the voter's slice, signed into the vote"),
      ...answerFields,
    })
    .describe('signs an x.vote/1 statement with the node key and posts it to /items/{item}/vote'),
  'expect-bulletin': z
    .strictObject({
      item: text,
      node: text.describe('node id whose bulletin to read'),
      state: z.enum(['uncommitted', 'voted', 'accepted', 'confirmed', 'conflicted']).optional(),
      value: z.enum(['yes', 'no']).optional(),
      json: z.unknown().optional().describe('subset match on the bulletin'),
      poll: durationSchema.optional(),
      ...waitFields,
      as: asField,
    })
    .describe('polls GET /items/{item}/bulletin/{node} until it matches'),

  // ---- raw HTTP
  http: z
    .strictObject({
      service: z.enum(['bench', 'relay']).optional().describe('default bench'),
      method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']),
      path: text.describe('path and query, e.g. /api/v1/boards'),
      headers: z.record(z.string(), text).optional(),
      form: z.record(z.string(), text).optional().describe('application/x-www-form-urlencoded body'),
      json: z.unknown().optional().describe('JSON body'),
      body: text.optional().describe('raw text body (with headers.content-type)'),
      multipart: z
        .record(z.string(), z.union([text, z.strictObject({ file: text, filename: text.optional() })]))
        .optional()
        .describe('multipart/form-data body: text fields, or {file} read relative to the scenario file'),
      ...answerFields,
    })
    .describe('any HTTP request'),

  // ---- a device on a backend, directly (no server)
  'device-flash': z
    .strictObject({ board, firmware: text.describe('relative to the scenario file') })
    .describe('opens the board on the target backend (closing a previous one), attaches UART capture and flashes; the core stays in reset until the next wait or delay'),
  'wait-serial': z
    .union([z.string().min(1), z.strictObject({ ...textMatchFields, ...waitFields })])
    // Wokwi's own form, `wait-serial: 'tick 1'`, is a text to find.
    .transform((b) => (typeof b === 'string' ? { text: b } : b))
    .describe('runs the device until its UART output (after what earlier waits consumed) matches; a bare text is {text}'),
  'write-serial': z
    .union([text, byteList, z.strictObject({ text: text.optional(), bytes: byteList.optional() })])
    // Wokwi's own form, `write-serial: [104, 105]`, is bytes.
    .transform((b) => (Array.isArray(b) ? { bytes: b } : b))
    .describe('sends text (or bytes: a list of 0-255, or {bytes}) to the firmware UART'),
  'expect-exit': z
    .strictObject({ code: z.number().int().optional(), crash: z.boolean().optional().describe('true: expect a crash instead of an exit'), ...waitFields })
    .describe('runs the device until the firmware exits (with code) or crashes'),
  'device-reset': z.strictObject({}).describe('puts the core back in reset; the next wait runs the firmware from the start'),
  delay: z
    .union([durationSchema, z.strictObject({ duration: durationSchema, clock: clockSchema.optional() })])
    .describe('lets time pass: advances the simulated clock (or sleeps in wall time) and runs an open device as long'),
  'expect-pin': pinBody.describe('Wokwi: a pin level (name, or its alias pin). No hilbench backend models pins yet: refused before the run starts'),
  'set-control': pinBody.describe('Wokwi: drive a control (name, or its alias pin). No hilbench backend models pins yet: refused before the run starts'),
} as const;

export type StepKind = keyof typeof stepBodies;
export const stepKinds = Object.keys(stepBodies) as StepKind[];
export type StepBody<K extends StepKind> = z.infer<(typeof stepBodies)[K]>;

/** One parsed step: its command, its body and an optional display name. */
export type ScenarioStep = { [K in StepKind]: { kind: K; name?: string; body: StepBody<K> } }[StepKind];

/** Which service or facility a step needs from the target. */
export function stepNeeds(kind: StepKind): 'bench' | 'relay' | 'device' | 'pins' | 'none' | 'http' {
  if (['register', 'open-session', 'get-session', 'heartbeat', 'end-session', 'flash', 'wait-job'].includes(kind)) return 'bench';
  if (['create-node', 'post-item', 'vote', 'expect-bulletin'].includes(kind)) return 'relay';
  if (['device-flash', 'wait-serial', 'write-serial', 'expect-exit', 'device-reset'].includes(kind)) return 'device';
  if (kind === 'expect-pin' || kind === 'set-control') return 'pins';
  if (kind === 'http') return 'http';
  return 'none';
}

export const backendFilter = z.array(z.enum(['mock', 'sim', 'qemu', 'renode', 'probe'])).min(1);

/** The file, without its steps (validated step by step for precise error paths). */
export const scenarioHeaderSchema = z.strictObject({
  version: z.literal(SCENARIO_VERSION).describe('format version; this is 1'),
  name: z.string().min(1).describe('shown in reports'),
  description: z.string().optional().describe('free text for people'),
  author: z.string().optional().describe('free text for people'),
  clock: z.enum(clockKinds).optional().describe('default clock of every wait (default simulated)'),
  timeout: durationSchema.optional().describe('default timeout of every wait and of every request (default 30s)'),
  board: z.string().min(1).optional().describe('default board id of steps that take one'),
  backends: backendFilter.optional().describe('run only on these backends (others report the scenario skipped)'),
  'time-limit': durationSchema.optional().describe('the most real time the whole scenario may take (default 10m); past it the run stops as a timeout'),
  'fail-text': z
    .array(z.string().min(1))
    .optional()
    .describe('fail at once when any of these texts shows up in device UART output or a job\'s UART (wokwi-cli --fail-text)'),
  vars: z.record(varName, z.string()).optional().describe('initial variables; --var name=value overrides'),
  steps: z.array(z.unknown()).min(1).describe('the steps, run in order until the first failure'),
});

export interface Scenario {
  version: 1;
  name: string;
  description?: string;
  author?: string;
  clock: ClockKind;
  timeoutMs: number;
  board?: string;
  backends?: z.infer<typeof backendFilter>;
  /** Texts that fail the scenario as soon as they appear in UART output. */
  failText: string[];
  /** Real milliseconds the whole run may take (`time-limit`); the runner's default when absent. */
  timeLimitMs?: number;
  vars: Record<string, string>;
  steps: ScenarioStep[];
  /** The file it came from (absolute), for failures and relative firmware paths. */
  file: string;
}

/** The JSON Schema of the whole file (draft 2020-12), for editors and `scenarios/schema.json`. */
export function scenarioJsonSchema(): Record<string, unknown> {
  const stepSchema = z.union(
    stepKinds.map((kind) => z.strictObject({ name: z.string().optional().describe('shown in reports'), [kind]: stepBodies[kind] }).describe(`step: ${kind}`)),
  );
  const file = scenarioHeaderSchema.extend({ steps: z.array(stepSchema).min(1) });
  const json = z.toJSONSchema(file, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    $schema: json.$schema,
    $id: 'https://hilbench.dev/schemas/scenario-1.json',
    title: 'hilbench scenario file, version 1',
    description: 'Generated from harness/scenario/scenario-schema.ts by harness/scenario/write-schema.ts; do not edit. See docs/scenarios.md.',
    ...Object.fromEntries(Object.entries(json).filter(([k]) => k !== '$schema')),
  };
}
