import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ScenarioError } from './scenario-error.js';
import { durationMs, type Scenario, scenarioHeaderSchema, type ScenarioStep, stepBodies, type StepKind, stepKinds } from './scenario-schema.js';

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
  checkStep(step, `${at}.${kind}`, issues);
  return step;
}

/** Rules zod cannot say alone: exactly one of text/regex, regexes that compile, durations that parse. */
function checkStep(step: ScenarioStep, at: string, issues: string[]): void {
  const textRule = (b: { text?: string; regex?: string; not?: boolean }, where: string, required: boolean) => {
    if (b.text !== undefined && b.regex !== undefined) issues.push(`${where}: give text or regex, not both`);
    if (b.not !== undefined && b.text === undefined && b.regex === undefined) issues.push(`${where}.not: negates text or regex, and neither is given`);
    if (required && b.text === undefined && b.regex === undefined) issues.push(`${where}: give text or regex`);
    if (b.regex !== undefined) {
      try {
        new RegExp(b.regex);
      } catch (err) {
        issues.push(`${where}.regex: ${(err as Error).message}`);
      }
    }
  };
  if (step.kind === 'wait-serial') textRule(step.body, at, true);
  if (step.kind === 'write-serial' && typeof step.body === 'object' && (step.body.text === undefined) === (step.body.bytes === undefined)) {
    issues.push(`${at}: give text or bytes (one of them)`);
  }
  const expectBody = (step.body as { expect?: { text?: string; regex?: string; json?: unknown; 'json-exact'?: unknown } }).expect;
  if (expectBody) {
    textRule(expectBody, `${at}.expect`, false);
    checkRegexes(expectBody.json, `${at}.expect.json`, issues);
    checkRegexes(expectBody['json-exact'], `${at}.expect.json-exact`, issues);
  }
  if (step.kind === 'expect-bulletin') checkRegexes(step.body.json, `${at}.json`, issues);
  if (step.kind === 'http') {
    const bodies = ['form', 'json', 'body', 'multipart'].filter((k) => (step.body as Record<string, unknown>)[k] !== undefined);
    if (bodies.length > 1) issues.push(`${at}: give one body (${bodies.join(', ')} given)`);
  }
}

/**
 * Compiles every `{"$regex": ...}` inside an expected JSON value, so a broken pattern is refused at
 * load, not when the step runs. `${...}` references are compiled as a plain word (their value
 * is only known at run time).
 */
function checkRegexes(value: unknown, at: string, issues: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkRegexes(v, `${at}[${i}]`, issues));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, v] of Object.entries(value)) {
    if (key === '$regex') {
      if (typeof v !== 'string') {
        issues.push(`${at}.$regex: expected a regular expression as text`);
        continue;
      }
      try {
        new RegExp(v.replace(/\$\{[^}]+\}/g, 'x'));
      } catch (err) {
        issues.push(`${at}.$regex: ${(err as Error).message}`);
      }
    } else checkRegexes(v, `${at}.${key}`, issues);
  }
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
    if (step && ['open-session', 'flash', 'device-flash'].includes(step.kind) && (step.body as { board?: string }).board === undefined && fileBoard === undefined) {
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
