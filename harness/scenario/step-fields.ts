import { z } from 'zod';
import { DURATION, durationMs } from './duration.js';

export { durationMs };

/**
 * The schema pieces steps share (durations, clocks, waits, text matches, HTTP expectations).
 * Each step's own schema lives in its file under `steps/`; these are the words they are made of.
 * Shared pieces are shared instances, so `scenarios/schema.json` stays what it was.
 */

/** Which clock a wait is measured on. `simulated`: time the runner drives (the fake host clock of an in-process server, the device's own time base); `wall`: real host time. */
export const clockKinds = ['simulated', 'wall'] as const;
export type ClockKind = (typeof clockKinds)[number];


export const durationSchema = z
  .union([z.number().nonnegative().finite(), z.string().regex(DURATION, 'expected a duration such as 500ms, 1.5s, 2m or 1h (a bare number is milliseconds)')])
  .describe('a duration: milliseconds as a number, or text with a unit: 500ms, 1.5s, 2m, 1h');

export const clockSchema = z.enum(clockKinds).describe('which clock this wait is measured on (default: the file-level clock)');
export const waitFields = {
  timeout: durationSchema.optional().describe('how long to wait at most (default: the file-level timeout)'),
  clock: clockSchema.optional(),
};

/** A text expectation: exact substring, a regular expression, either negated. */
export const textMatchFields = {
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

export const varName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'a variable name: letters, digits, _ and -, not starting with a digit');
export const asField = varName.optional().describe('store the JSON answer under this name: ${name.field} then reads it');
const captureField = z
  .record(varName, z.string().min(1))
  .optional()
  .describe('capture values from the JSON answer: {name: "dotted.path"}, then ${name}');
/** How long one request may take, in real host time; the file-level timeout when absent. */
export const requestTimeout = durationSchema.optional().describe('how long each request may take until its whole answer is read, in real time (default: the file-level timeout)');
export const answerFields = { as: asField, capture: captureField, expect: expectSchema.optional(), timeout: requestTimeout };

/** A number (or its decimal text, as a recording has it), or one `${...}` variable holding it (checked by the server once substituted). */
export const numberOrVariable = z
  .union([z.number(), z.string().regex(/^(?:\$\{[^}]+\}|[0-9]+(?:\.[0-9]+)?)$/, 'expected a number or one ${variable}')])
  .describe('a number, or one ${variable} holding it');

/** A value substituted with `${...}` before use. */
export const text = z.string();
export const boardField = z.string().min(1).optional().describe('board id (default: the file-level board)');

export const byteList = z.array(z.number().int().min(0).max(255)).min(1).describe('bytes, each 0-255');

/** Wokwi's pin steps: `name`, or `pin` as Wokwi's own alias of it (one of the two). */
export const pinBody = z
  .strictObject({
    'part-id': z.string().optional().describe("wokwi's part; hilbench has one part, the board, and ignores it"),
    name: z.string().min(1).optional(),
    pin: z.string().min(1).optional(),
    value: z.union([z.literal(0), z.literal(1), z.boolean()]),
  })
  .refine((b) => (b.name === undefined) !== (b.pin === undefined), { message: 'give name (or its alias pin), one of them' })
  .transform(({ pin, ...rest }) => ({ ...rest, name: (rest.name ?? pin) as string }));

/** A pin step's value as a level: 0/1, or false/true. */
export function pinLevel(value: 0 | 1 | boolean): 0 | 1 {
  return value === true || value === 1 ? 1 : 0;
}
