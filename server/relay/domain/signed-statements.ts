import { type AuthoredItem, type ItemAuthorship, authorshipMismatch, parseItemAuthorship, verifyItemAuthorship } from '../../../core/relay/item-authorship.js';
import type { Problem } from '../../../core/relay/problem.js';
import { type SliceDeclaration, parseSliceDeclaration, verifySliceDeclaration } from '../../../core/relay/slice-declaration.js';
import { invalidInputAt } from './relay-errors.js';
import { coreProblemMessage } from '../../../wire/problem-detail.js';
import { throwCoreProblems } from './signed-document.js';

/**
 * The relay's checks of x.item/1 authorship statements and x.slice/1 slice declarations (core
 * `item-authorship.ts`, `slice-declaration.ts`), in the two forms it needs: a 422 located in the
 * request for a client, and a reason for a peer's event (federation refuses it and counts it
 * against the peer's standing). One rule for both, as `verifyVote` is for votes.
 */

/** The author's statement for `item`, or a 422 under `loc` naming what is wrong. */
export function requireAuthorship(input: unknown, item: AuthoredItem, loc: (string | number)[]): ItemAuthorship {
  const parsed = parseItemAuthorship(input);
  if (!parsed.ok) throwCoreProblems(parsed.problems, loc);
  const doc = parsed.value;
  const mismatch = authorshipMismatch(doc, item);
  if (mismatch) throwCoreProblems([mismatch], loc);
  if (!verifyItemAuthorship(doc)) throw invalidInputAt(loc, [{ path: ['sig'], code: 'not_author_signature', input: doc.sig }]);
  return doc;
}

/** Why `input` is not `item`'s authorship statement signed by its author, or null when it is. */
export function authorshipProblem(input: unknown, item: AuthoredItem): string | null {
  const parsed = parseItemAuthorship(input);
  if (!parsed.ok) return `authorship statement malformed at ${malformedAt(parsed.problems)}`;
  const mismatch = authorshipMismatch(parsed.value, item);
  if (mismatch) return `authorship statement does not match the item: ${mismatch.path.join('.')}`;
  if (!verifyItemAuthorship(parsed.value)) return "authorship signature does not verify against the author's key";
  return null;
}

/** A declaration from a request, parsed and verified, or a 422 under `loc`. */
export function requireSliceDeclaration(input: unknown, loc: (string | number)[]): SliceDeclaration {
  const parsed = parseSliceDeclaration(input);
  if (!parsed.ok) throwCoreProblems(parsed.problems, loc);
  if (!verifySliceDeclaration(parsed.value)) throw invalidInputAt(loc, [{ path: ['sig'], code: 'not_declarer_signature', input: parsed.value.sig }]);
  return parsed.value;
}

/** A declaration from a peer, parsed and verified, or why not. */
export function sliceDeclarationOrProblem(input: unknown): { ok: true; value: SliceDeclaration } | { ok: false; problem: string } {
  const parsed = parseSliceDeclaration(input);
  if (!parsed.ok) return { ok: false, problem: `slice declaration malformed at ${malformedAt(parsed.problems)}` };
  if (!verifySliceDeclaration(parsed.value)) return { ok: false, problem: "slice declaration signature does not verify against the node's key" };
  return { ok: true, value: parsed.value };
}

/** `path: message` of the first problem, for a peer's refused event (as a 422 entry would word it). */
function malformedAt(problems: readonly Problem[]): string {
  const first = problems[0];
  return first === undefined ? ': ' : `${first.path.join('.')}: ${coreProblemMessage(first)}`;
}
