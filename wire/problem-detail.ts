import { z } from 'zod';
import type { Problem } from '../core/relay/problem.js';
import { type PydanticError, coreProblemError, plural, stringTooLong, stringTooShort } from './core-problem-errors.js';

/**
 * The problem vocabulary of the wire: the one translator of both services from zod issues and
 * from the relay core's neutral problems to pydantic v2 errors in its exact words (`type`, `msg`, `ctx`), so
 * a 422 from the bench or the relay reads as the FastAPI implementation of the spec would write
 * it. Form fields (`form-fields.ts`) and the relay's JSON, query and path schemas all come
 * through here; the server throws the result (`parseOr422`, server/http/http-error.ts). Every
 * `type` an answer can carry is in `problemTypes`, documented in docs/problems.md; a test keeps
 * the three in step (decision 0581).
 */

/**
 * One entry of a 422 body, exactly as pydantic v2 writes it, keys in its order:
 * `type, loc, msg, input` and `ctx` when the error has context.
 */
export interface ValidationErrorItem {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/**
 * The catalog: every pydantic error `type` a 422 of the bench or the relay can carry, with what
 * it means. docs/problems.md lists the same codes (test/integration/problem-catalog.test.ts).
 */
export const problemTypes = {
  missing: 'A required field is absent.',
  extra_forbidden: 'A field the body may not have.',
  value_error: 'A value that fails a rule of its own, said in the message (`Value error, ...`).',
  json_invalid: 'A body, or a field that must hold JSON text, that is not valid JSON (a body\'s at ["body", <character where it stops being JSON>]).',
  model_attributes_type: 'A body or a nested document that is no JSON object.',
  string_type: 'Not a string.',
  string_too_short: 'A string shorter than `ctx.min_length` characters.',
  string_too_long: 'A string longer than `ctx.max_length` characters (the relay counts code points).',
  string_pattern_mismatch: 'A string that does not match `ctx.pattern`.',
  string_unicode: 'A string holding a lone UTF-16 surrogate, which has no UTF-8 form.',
  literal_error: 'Not the one value allowed (`ctx.expected`), e.g. a document `schema`.',
  enum: 'Not one of the values allowed (`ctx.expected`).',
  int_type: 'Not an integer (in JSON, any other value: `"1"` included).',
  int_parsing: 'Text (a query parameter) that does not parse as an integer.',
  float_type: 'Not a number.',
  float_parsing: 'Numeric text that does not parse as a number.',
  finite_number: 'NaN or an infinity.',
  bool_type: 'Not a boolean.',
  list_type: 'Not a list.',
  greater_than: 'A number not above `ctx.gt`.',
  greater_than_equal: 'A number below `ctx.ge`.',
  less_than: 'A number not below `ctx.lt`.',
  less_than_equal: 'A number above `ctx.le`.',
  too_short: 'A list with fewer than `ctx.min_length` items.',
  too_long: 'A list with more than `ctx.max_length` items.',
  url_parsing: 'Not an absolute URL.',
  url_scheme: 'A URL whose scheme is not http or https.',
} as const;
export type ProblemType = keyof typeof problemTypes;

/** A 422 answer's entries as clients parse them (keys beyond these pass through). */
export const validationErrorItemSchema = z.looseObject({
  type: z.string(),
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  input: z.unknown(),
  ctx: z.record(z.string(), z.unknown()).optional(),
});

/**
 * A custom issue names its pydantic error in `params`: either whole (`{ pydantic: {type, msg, ctx} }`)
 * or as `{ type, ctx }` with the issue's message already in pydantic's words.
 */
function customError(issue: z.core.$ZodIssueCustom): PydanticError {
  const params = (issue.params ?? {}) as { pydantic?: PydanticError; type?: string; ctx?: Record<string, unknown> };
  if (params.pydantic) return params.pydantic;
  return { type: params.type ?? 'value_error', msg: issue.message, ...(params.ctx ? { ctx: params.ctx } : {}) };
}

function tooSmall(issue: z.core.$ZodIssueTooSmall): PydanticError | undefined {
  const min = Number(issue.minimum);
  switch (issue.origin) {
    case 'string':
      return stringTooShort(min);
    case 'array':
      return { type: 'too_short', msg: `List should have at least ${plural(min, 'item')}`, ctx: { min_length: min } };
    case 'number':
    case 'int':
    case 'bigint':
      // zod's `gt(n)` is a non-inclusive minimum: pydantic's `greater_than`, not `greater_than_equal`.
      return issue.inclusive
        ? { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${min}`, ctx: { ge: min } }
        : { type: 'greater_than', msg: `Input should be greater than ${min}`, ctx: { gt: min } };
    default:
      return undefined;
  }
}

function tooBig(issue: z.core.$ZodIssueTooBig): PydanticError | undefined {
  const max = Number(issue.maximum);
  switch (issue.origin) {
    case 'string':
      return stringTooLong(max);
    case 'array':
      return { type: 'too_long', msg: `List should have at most ${plural(max, 'item')}`, ctx: { max_length: max } };
    case 'number':
    case 'int':
    case 'bigint':
      return issue.inclusive
        ? { type: 'less_than_equal', msg: `Input should be less than or equal to ${max}`, ctx: { le: max } }
        : { type: 'less_than', msg: `Input should be less than ${max}`, ctx: { lt: max } };
    default:
      return undefined;
  }
}

/** Maps one zod issue on a present value to pydantic's `type`, `msg` and `ctx`. */
export function pydanticErrorOf(issue: z.core.$ZodIssue): PydanticError {
  switch (issue.code) {
    case 'custom':
      return customError(issue);
    case 'too_small': {
      const e = tooSmall(issue);
      if (e) return e;
      break;
    }
    case 'too_big': {
      const e = tooBig(issue);
      if (e) return e;
      break;
    }
    case 'invalid_format':
      if (issue.format === 'regex' && 'pattern' in issue && typeof issue.pattern === 'string') {
        // zod reports `/source/flags`; pydantic shows the pattern source alone.
        const source = issue.pattern.replace(/^\/(.*)\/[a-z]*$/s, '$1');
        return { type: 'string_pattern_mismatch', msg: `String should match pattern '${source}'`, ctx: { pattern: source } };
      }
      break;
    case 'invalid_type':
      // zod refuses NaN and ±Infinity as numbers (and says so in `received`); pydantic's word for
      // that is finite_number (allow_inf_nan=False).
      if (issue.expected === 'number' && 'received' in issue && issue.received !== undefined) return { type: 'finite_number', msg: 'Input should be a finite number' };
      // A z.object is a pydantic model, which FastAPI validates from attributes: a body or field
      // that is no object gets model_attributes_type, in these words.
      if (issue.expected === 'object') return { type: 'model_attributes_type', msg: 'Input should be a valid dictionary or object to extract fields from' };
      // An integer schema given another type: `integerWords` named it (zod says "number" for both).
      if (issue.expected === 'number' && issue.message === INT_TYPE.msg) return INT_TYPE;
      {
        // zod names JSON's types; pydantic names Python's, and says "number" for a float.
        const pydantic = PYDANTIC_TYPES[issue.expected] ?? { type: `${issue.expected}_type`, noun: issue.expected };
        return { type: pydantic.type, msg: `Input should be a valid ${pydantic.noun}` };
      }
    case 'invalid_value': {
      const expected = issue.values.map((v) => JSON.stringify(v));
      return { type: 'enum', msg: `Input should be ${expected.join(' or ')}`, ctx: { expected: expected.join(', ') } };
    }
    default:
      break;
  }
  return { type: 'value_error', msg: `Value error, ${issue.message}`, ctx: { error: {} } };
}

/**
 * pydantic's strict `int` refusing another type (a string such as `"1"`, null, a boolean): the
 * services read JSON strictly, never coercing text to a number (a signed document is signed as
 * sent), so they answer `int_type` where lax pydantic would parse `"1"` or answer `int_parsing`
 * (which only numeric text in a query or a form answers, `form-fields.ts`).
 */
const INT_TYPE: PydanticError = { type: 'int_type', msg: 'Input should be a valid integer' };

/**
 * zod's error map for a parse whose issues become 422 entries: zod reports an integer schema
 * (`z.number().int()`) given a non-number as "expected number", as it does a plain number, and
 * drops the schema from the issue; this names the integer in the issue's message while the schema
 * is still at hand, and `pydanticErrorOf` answers it as `int_type` instead of `float_type`.
 */
const integerWords: z.core.$ZodErrorMap = (issue) =>
  issue.code === 'invalid_type' && issue.expected === 'number' && issue.inst instanceof z.ZodNumber && issue.inst.isInt ? INT_TYPE.msg : undefined;

/**
 * `schema.safeParse(input)` for validation that answers 422s: the one parse of both services'
 * bodies, queries, paths and forms, so each issue carries what `zodIssuesToValidation` and
 * `pydanticErrorOf` need to word it as pydantic does.
 */
export function safeParseForProblems<S extends z.ZodType>(schema: S, input: unknown, options: { reportInput?: boolean } = {}): z.ZodSafeParseResult<z.output<S>> {
  return schema.safeParse(input, { ...options, error: integerWords });
}

/** zod's expected type -> pydantic's error type and the noun of its message. */
const PYDANTIC_TYPES: Partial<Record<string, { type: string; noun: string }>> = {
  array: { type: 'list_type', noun: 'list' },
  boolean: { type: 'bool_type', noun: 'boolean' },
  number: { type: 'float_type', noun: 'number' },
  int: { type: 'int_type', noun: 'integer' },
  string: { type: 'string_type', noun: 'string' },
};

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

function item(error: PydanticError, loc: (string | number)[], input: unknown): ValidationErrorItem {
  // Keys in pydantic's wire order; `ctx` only when there is one.
  const out: ValidationErrorItem = { type: error.type, loc, msg: error.msg, input: input === undefined ? null : input };
  if (error.ctx !== undefined) out.ctx = error.ctx;
  return out;
}

/**
 * Maps zod issues to 422 entries located under `where` (`body`, `query`, `path`); `root` is the
 * value that was parsed, so each entry carries the input found at its place.
 */
export function zodIssuesToValidation(issues: readonly z.core.$ZodIssue[], where: string, root: unknown): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  for (const zi of issues) {
    const path = zi.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    const loc = [where, ...path];
    const input = valueAt(root, zi.path);
    if (zi.code === 'invalid_type' && input === undefined) out.push(item({ type: 'missing', msg: 'Field required' }, loc, null));
    else if (zi.code === 'unrecognized_keys') {
      for (const key of zi.keys) out.push(item({ type: 'extra_forbidden', msg: 'Extra inputs are not permitted' }, [...loc, key], valueAt(root, [...zi.path, key])));
    } else out.push(item(pydanticErrorOf(zi), loc, input));
  }
  return out;
}

/**
 * The relay core's neutral problems (`path` inside the value that was validated) as 422 entries
 * located under `where` (e.g. `['body']`), worded by `coreProblemError`: the core's second
 * vocabulary goes through this module too.
 */
export function coreProblemsToValidation(problems: readonly Problem[], where: (string | number)[]): ValidationErrorItem[] {
  return problems.map((p) => item(coreProblemError(p), [...where, ...p.path], p.input));
}

/** The message of a core problem as a 422 entry would say it (for reasons given to a peer or a log). */
export function coreProblemMessage(problem: Problem): string {
  return coreProblemError(problem).msg;
}
