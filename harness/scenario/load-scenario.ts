import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ScenarioError } from './scenario-error.js';
import { durationMs, type Scenario, scenarioHeaderSchema, type ScenarioStep, stepBodies, type StepKind, stepKinds } from './scenario-schema.js';
import { checkJsonRegexes, checkTextMatch } from './step-checks.js';
import { stepDefinition } from './step-registry.js';

/** Default timeout of every wait when the file states none (wokwi-cli's default is 30 000 ms too). */
export const DEFAULT_TIMEOUT_MS = 30_000;

function formatPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else out += out ? `.${String(s)}` : String(s);
  }
  return out || '(file)';
}

function issuesOf(error: z.ZodError, prefix: readonly PropertyKey[]): string[] {
  return error.issues.map((issue) => {
    const where = formatPath([...prefix, ...issue.path]);
    const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    return `${where}: ${issue.message}${keys}`;
  });
}

function parseStep(raw: unknown, index: number, issues: string[]): ScenarioStep | undefined {
  const at = `steps[${index}]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    issues.push(`${at}: expected an object with one command (${stepKinds.join(', ')})`);
    return undefined;
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  const commands = entries.filter(([key]) => (stepKinds as string[]).includes(key));
  const unknown = entries.filter(([key]) => key !== 'name' && !(stepKinds as string[]).includes(key)).map(([key]) => key);
  if (unknown.length) issues.push(`${at}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')} (commands: ${stepKinds.join(', ')})`);
  const name = (raw as { name?: unknown }).name;
  if (name !== undefined && typeof name !== 'string') issues.push(`${at}.name: expected text`);
  if (commands.length !== 1) {
    if (!unknown.length) issues.push(`${at}: expected exactly one command, found ${commands.length ? commands.map(([k]) => k).join(' and ') : 'none'}`);
    return undefined;
  }
  const [kind, body] = commands[0] as [StepKind, unknown];
  const parsed = stepBodies[kind].safeParse(body);
  if (!parsed.success) {
    issues.push(...issuesOf(parsed.error, ['steps', index, kind]));
    return undefined;
  }
  const step = { kind, body: parsed.data, ...(typeof name === 'string' ? { name } : {}) } as ScenarioStep;
  checkExpect(step, `${at}.${kind}`, issues);
  stepDefinition(kind).check?.(parsed.data, `${at}.${kind}`, issues);
  return step;
}

/** The `expect` of any request step: its text rule, and regexes inside its JSON that compile. Step-specific rules live in the step's `check`. */
function checkExpect(step: ScenarioStep, at: string, issues: string[]): void {
  const expectBody = (step.body as { expect?: { text?: string; regex?: string; not?: boolean; json?: unknown; 'json-exact'?: unknown } }).expect;
  if (!expectBody) return;
  checkTextMatch(expectBody, `${at}.expect`, issues, { required: false });
  checkJsonRegexes(expectBody.json, `${at}.expect.json`, issues);
  checkJsonRegexes(expectBody['json-exact'], `${at}.expect.json-exact`, issues);
}

/** Parses scenario text (YAML or JSON, which is YAML) from `file`; throws `ScenarioError('invalid')` listing every problem. */
export function parseScenario(source: string, file: string): Scenario {
  const doc = parseDocument(source, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) {
    const issues = doc.errors.map((e) => `(file): ${e.message}`);
    throw new ScenarioError('invalid', `${file}: not valid YAML or JSON:\n  ${issues.join('\n  ')}`, issues);
  }
  const raw: unknown = doc.toJS();
  const header = scenarioHeaderSchema.safeParse(raw);
  const issues: string[] = [];
  if (!header.success) issues.push(...issuesOf(header.error, []));
  const rawSteps = Array.isArray((raw as { steps?: unknown } | null)?.steps) ? ((raw as { steps: unknown[] }).steps) : [];
  const steps = rawSteps.map((s, i) => parseStep(s, i, issues));
  const fileBoard = header.success ? header.data.board : (raw as { board?: unknown } | null)?.board;
  steps.forEach((step, i) => {
    if (step && stepDefinition(step.kind).usesBoard && (step.body as { board?: string }).board === undefined && fileBoard === undefined) {
      issues.push(`steps[${i}].${step.kind}.board: required (no board at the top of the file)`);
    }
  });
  if (issues.length || !header.success) {
    throw new ScenarioError('invalid', `${file}: ${issues.length} problem${issues.length === 1 ? '' : 's'}:\n  ${issues.join('\n  ')}`, issues);
  }
  const h = header.data;
  return {
    version: 1,
    name: h.name,
    ...(h.description !== undefined ? { description: h.description } : {}),
    ...(h.author !== undefined ? { author: h.author } : {}),
    clock: h.clock ?? 'simulated',
    timeoutMs: h.timeout === undefined ? DEFAULT_TIMEOUT_MS : durationMs(h.timeout),
    ...(h.board !== undefined ? { board: h.board } : {}),
    ...(h.backends !== undefined ? { backends: h.backends } : {}),
    failText: h['fail-text'] ?? [],
    ...(h['time-limit'] !== undefined ? { timeLimitMs: durationMs(h['time-limit']) } : {}),
    vars: h.vars ?? {},
    steps: steps as ScenarioStep[],
    file: path.resolve(file),
  };
}

/** Reads and validates a scenario file. */
export function loadScenario(file: string): Scenario {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ScenarioError('invalid', `${file}: cannot read: ${(err as Error).message}`, [], { cause: err });
  }
  return parseScenario(source, file);
}
