import { createHash } from 'node:crypto';
import { type Problem, type Validated, codePointLength, hasLoneSurrogate, isPlainObject, notAnObject } from './problem.js';

/**
 * Claim items and their ids (relay spec, "Item"; design note, "Claim ids").
 *
 * `kind` values: a claim says what sort of thing it is so readers know how to vote on it.
 * - `statement`:       an assertion of fact to uphold or reject ("the UART prints at 115200 baud").
 * - `question`:        a yes/no question; `yes` upholds the answer "yes".
 * - `measurement`:     a measured value with its method and units in the body.
 * - `observation`:     something seen on a bench that is not a number (a LED pattern, a hang).
 * - `report`:          a test report (several results); `yes` means "the report is accurate".
 * - `firmware-result`: the outcome of running one firmware image on one board, as hilbench records it.
 * - `proposal`:        a change to adopt (a board file, a limit); `yes` means "adopt it".
 */
export const claimKinds = [
  'statement',
  'question',
  'measurement',
  'observation',
  'report',
  'firmware-result',
  'proposal',
] as const;

export type ClaimKind = (typeof claimKinds)[number];

export interface Claim {
  kind: ClaimKind;
  title: string;
  body: string;
}

/** Limits in Unicode code points (relay spec, "Limits"). */
export const CLAIM_TITLE_MAX_CODE_POINTS = 200;
export const CLAIM_BODY_MAX_CODE_POINTS = 32000;
/** Largest file item, in bytes (relay spec, "Limits"). */
export const FILE_MAX_BYTES = 16_777_216;

const CLAIM_PREFIX = 'x.claim/1\n';

/**
 * Item id of a claim: SHA-256 hex of `"x.claim/1\n" + kind + "\n" + title + "\n" + body` in UTF-8.
 * Only meaningful for a validated claim: a newline in `kind` or `title`, or a lone surrogate anywhere
 * (UTF-8 turns it into U+FFFD), would let two different claims share an id.
 */
export function claimId(claim: { kind: string; title: string; body: string }): string {
  return createHash('sha256')
    .update(`${CLAIM_PREFIX}${claim.kind}\n${claim.title}\n${claim.body}`, 'utf8')
    .digest('hex');
}

/** Item id of a file: SHA-256 hex of its bytes. */
export function fileId(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** True for a SHA-256 hex digest in lower case: the form of every item id. */
export function isItemId(s: unknown): s is string {
  return typeof s === 'string' && /^[0-9a-f]{64}$/.test(s);
}

const LINE_BREAK = /[\n\r]/;

/**
 * Parses an untrusted claim: a plain object with exactly `kind`, `title` and `body` strings. Returns the
 * typed claim or every problem found (`missing`, `not_string`, `lone_surrogate`, `line_break` in kind
 * or title, `not_one_of` for an unknown kind, `too_short` for an empty title, `too_long` past the
 * limit in code points, `extra`).
 */
export function validateClaim(input: unknown): Validated<Claim> {
  if (!isPlainObject(input)) {
    return { ok: false, problems: [notAnObject([], input)] };
  }
  const problems: Problem[] = [];
  const text = (field: 'kind' | 'title' | 'body'): string | undefined => {
    if (!(field in input)) {
      problems.push({ path: [field], code: 'missing' });
      return undefined;
    }
    const value = input[field];
    if (typeof value !== 'string') {
      problems.push({ path: [field], code: 'not_string', input: value });
      return undefined;
    }
    if (hasLoneSurrogate(value)) {
      problems.push({ path: [field], code: 'lone_surrogate', input: value });
      return undefined;
    }
    return value;
  };
  const kind = text('kind');
  const title = text('title');
  const body = text('body');
  if (kind !== undefined) {
    if (LINE_BREAK.test(kind)) {
      problems.push({ path: ['kind'], code: 'line_break', input: kind });
    } else if (!(claimKinds as readonly string[]).includes(kind)) {
      problems.push({ path: ['kind'], code: 'not_one_of', input: kind, expected: claimKinds });
    }
  }
  if (title !== undefined) {
    if (LINE_BREAK.test(title)) {
      problems.push({ path: ['title'], code: 'line_break', input: title });
    }
    const length = codePointLength(title);
    if (length < 1) {
      problems.push({ path: ['title'], code: 'too_short', input: title, limit: 1 });
    } else if (length > CLAIM_TITLE_MAX_CODE_POINTS) {
      problems.push(tooLong('title', title, CLAIM_TITLE_MAX_CODE_POINTS));
    }
  }
  if (body !== undefined && codePointLength(body) > CLAIM_BODY_MAX_CODE_POINTS) {
    problems.push(tooLong('body', body, CLAIM_BODY_MAX_CODE_POINTS));
  }
  for (const key of Object.keys(input)) {
    if (key !== 'kind' && key !== 'title' && key !== 'body') {
      problems.push({ path: [key], code: 'extra', input: input[key] });
    }
  }
  if (problems.length > 0 || kind === undefined || title === undefined || body === undefined) {
    return { ok: false, problems };
  }
  return { ok: true, value: { kind: kind as ClaimKind, title, body } };
}

function tooLong(field: string, value: string, max: number): Problem {
  return {
    path: [field],
    code: 'too_long',
    // A 32000-code-point body echoed back helps no one: the length is what matters.
    input: value.length > 100 ? `${Array.from(value).slice(0, 100).join('')}…` : value,
    limit: max,
  };
}
