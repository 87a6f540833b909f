import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { HEX64_PATTERN, type Problem, type Validated, isPlainObject, notAnObject } from './problem.js';
import { isNodeId } from './node-id.js';

/**
 * Quorum sets (a node's slice), design note scp-s5, "Vocabulary": satisfied when at least `t` of its
 * entries are — each validator in `v` by being present, each inner set in `i` recursively.
 * A node's own id never appears in its declared set: self is implicit, the effective set being
 * `{t: 2, v: [self], i: [Q]}`.
 */
export interface QuorumSet {
  t: number;
  v: string[];
  i: QuorumSet[];
}

/** Sanity limits of the design note. */
export const QUORUM_SET_MAX_DEPTH = 4;
export const QUORUM_SET_MAX_NODES = 1000;

/** Number of entries (validators plus inner sets) at the top of `q`. */
export function entryCount(q: QuorumSet): number {
  return q.v.length + q.i.length;
}

/** Default threshold for `n` entries: 67 % rounded up, `1 + floor((67n - 1) / 100)`; n >= 1. */
export function defaultThreshold(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`defaultThreshold needs a whole n >= 1, got ${n}`);
  return 1 + Math.floor((n * 67 - 1) / 100);
}

/** True when the node set `s` satisfies `q`. */
export function sat(q: QuorumSet, s: ReadonlySet<string>): boolean {
  let met = 0;
  for (const node of q.v) {
    if (s.has(node) && ++met >= q.t) return true;
  }
  for (const inner of q.i) {
    if (sat(inner, s) && ++met >= q.t) return true;
  }
  return false;
}

/**
 * True when `b` is v-blocking for `q`: it meets more than `entries - t` entries, recursively, so no set
 * avoiding `b` can satisfy `q`. Equivalent to `!sat(q, members(q) \ b)`.
 */
export function blocks(q: QuorumSet, b: { has(node: string): boolean }): boolean {
  const slack = entryCount(q) - q.t;
  let hit = 0;
  for (const node of q.v) {
    if (b.has(node) && ++hit > slack) return true;
  }
  for (const inner of q.i) {
    if (blocks(inner, b) && ++hit > slack) return true;
  }
  return false;
}

/** Every node named anywhere in `q`. */
export function quorumSetMembers(q: QuorumSet, into: Set<string> = new Set()): Set<string> {
  for (const node of q.v) into.add(node);
  for (const inner of q.i) quorumSetMembers(inner, into);
  return into;
}

/**
 * The largest quorum inside `nodes`: repeatedly drop every member whose effective slice
 * (`{t:2, v:[self], i:[Q]}`) is not satisfied inside the remaining set, until nothing changes.
 * A node whose slice is unknown (`sliceOf` returns undefined) is dropped. Returns an empty set when
 * `nodes` holds no quorum. Quorums are closed under union, so the result contains every quorum inside.
 *
 * Slices are treated as immutable values: each QuorumSet object is compiled once to integer form
 * (cached by identity), because hashing 64-character ids dominated the cost at 1000 nodes.
 */
export function maxQuorum(nodes: Iterable<string>, sliceOf: (node: string) => QuorumSet | undefined): Set<string> {
  const names: string[] = [];
  const ids: number[] = [];
  const compiled: CompiledSet[] = [];
  for (const node of new Set(nodes)) {
    const slice = sliceOf(node);
    if (!slice) continue;
    names.push(node);
    ids.push(intern(node));
    compiled.push(compile(slice));
  }
  // Allocated after compiling: compiling may intern ids never seen before.
  const member = new Uint8Array(internedIds.size);
  for (const id of ids) member[id] = 1;
  const alive = new Uint8Array(names.length).fill(1);
  // Self is in the set by construction, so the effective set reduces to sat(Q, current).
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = 0; k < names.length; k++) {
      if (alive[k] === 1 && !satCompiled(compiled[k] as CompiledSet, member)) {
        alive[k] = 0;
        member[ids[k] as number] = 0;
        changed = true;
      }
    }
  }
  const out = new Set<string>();
  for (let k = 0; k < names.length; k++) if (alive[k] === 1) out.add(names[k] as string);
  return out;
}

interface CompiledSet {
  t: number;
  v: Int32Array;
  i: CompiledSet[];
}

// Node ids that ever appeared with a slice or inside one, numbered. Grows with the nodes that have
// slices and their members only: maxQuorum interns a node after sliceOf() said it has a slice, so
// voters nobody knows never land here.
const internedIds = new Map<string, number>();
const compiledSlices = new WeakMap<QuorumSet, CompiledSet>();

function intern(id: string): number {
  let n = internedIds.get(id);
  if (n === undefined) {
    n = internedIds.size;
    internedIds.set(id, n);
  }
  return n;
}

function compile(q: QuorumSet): CompiledSet {
  let c = compiledSlices.get(q);
  if (!c) {
    const v = new Int32Array(q.v.length);
    for (let k = 0; k < v.length; k++) v[k] = intern(q.v[k] as string);
    c = { t: q.t, v, i: q.i.map(compile) };
    compiledSlices.set(q, c);
  }
  return c;
}

function satCompiled(q: CompiledSet, member: Uint8Array): boolean {
  let met = 0;
  const v = q.v;
  for (let k = 0; k < v.length; k++) {
    if (member[v[k] as number] === 1 && ++met >= q.t) return true;
  }
  for (const inner of q.i) {
    if (satCompiled(inner, member) && ++met >= q.t) return true;
  }
  return false;
}

/**
 * Every node reachable from `self` through declared slices, self included (design note property 12:
 * statements of nodes outside this closure never change self's tally).
 */
export function sliceClosure(self: string, sliceOf: (node: string) => QuorumSet | undefined): Set<string> {
  const seen = new Set<string>([self]);
  const todo = [self];
  for (let node = todo.pop(); node !== undefined; node = todo.pop()) {
    const slice = sliceOf(node);
    if (!slice) continue;
    for (const member of quorumSetMembers(slice)) {
      if (!seen.has(member)) {
        seen.add(member);
        todo.push(member);
      }
    }
  }
  return seen;
}

/**
 * The nesting problem `validateQuorumSet` reports for a set nested deeper than
 * `QUORUM_SET_MAX_DEPTH` (`loc` at the first `i` too deep, in document order), found without
 * recursion, or undefined. Recursive walkers (a zod schema, a validator) call it first: a set
 * nested 1 000 deep overflowed the stack of one and answered 500 (issue 9). Only objects on
 * the `i` path are followed; anything else is left for the full validation to name.
 */
export function quorumSetDepthProblem(input: unknown): Problem | undefined {
  const todo: { value: unknown; loc: string[]; depth: number }[] = [{ value: input, loc: [], depth: 1 }];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    const { value, loc, depth } = next;
    if (!isPlainObject(value) || !Array.isArray(value.i) || value.i.length === 0) continue;
    if (depth >= QUORUM_SET_MAX_DEPTH) return depthProblem([...loc, 'i']);
    // Pushed last to first, so the first inner set is looked at first.
    for (let k = value.i.length - 1; k >= 0; k--) todo.push({ value: value.i[k], loc: [...loc, 'i', String(k)], depth: depth + 1 });
  }
  return undefined;
}

function depthProblem(path: string[]): Problem {
  return { path, code: 'quorum_set_too_deep', limit: QUORUM_SET_MAX_DEPTH };
}

/**
 * Parses an untrusted quorum set and checks the design note's sanity rules: `t` a whole number with
 * `1 <= t <= entries`, no node twice anywhere, nesting depth <= 4 (a flat set has depth 1), 1..1000
 * nodes in all, node ids well formed, and, when `self` is given, self not listed (it is implicit).
 * A missing `v` or `i` means an empty list; a missing `t` is a problem (callers that default it fill it in).
 * Problems have their `path` inside the set, e.g. `['i', '0', 't']`.
 */
export function validateQuorumSet(input: unknown, options: { self?: string } = {}): Validated<QuorumSet> {
  const problems: Problem[] = [];
  const seen: SeenNodes = new Map();
  const parsed = parseLevel(input, [], 1, problems, seen);
  if (parsed) {
    if (seen.size < 1 || seen.size > QUORUM_SET_MAX_NODES) {
      problems.push({ path: [], code: 'quorum_set_size', limit: QUORUM_SET_MAX_NODES, count: seen.size });
    }
    if (options.self !== undefined && seen.has(options.self)) {
      const first = seen.get(options.self);
      problems.push({ path: first ? validatorPath(first) : [], code: 'self_in_slice', input: options.self });
    }
  }
  if (problems.length > 0 || !parsed) return { ok: false, problems };
  return { ok: true, value: parsed };
}

/**
 * Where each node was first listed: its level's path and its index there, made into a path only for
 * a problem (a vote's slice of 20 made 20 such arrays per vote, for nothing, decision 1160).
 */
type SeenNodes = Map<string, { loc: string[]; k: number }>;

function validatorPath(at: { loc: string[]; k: number }): string[] {
  return [...at.loc, 'v', String(at.k)];
}

function parseLevel(input: unknown, loc: string[], depth: number, problems: Problem[], seen: SeenNodes): QuorumSet | undefined {
  if (!isPlainObject(input)) {
    problems.push(notAnObject(loc, input));
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(input)) {
    if (key !== 't' && key !== 'v' && key !== 'i') {
      problems.push({ path: [...loc, key], code: 'extra', input: input[key] });
    }
  }
  const t = input.t;
  if (!('t' in input)) problems.push({ path: [...loc, 't'], code: 'missing' });
  else if (typeof t !== 'number' || !Number.isSafeInteger(t)) problems.push({ path: [...loc, 't'], code: 'not_integer', input: t });
  const v: string[] = [];
  const rawV = 'v' in input ? input.v : [];
  if (!Array.isArray(rawV)) {
    problems.push({ path: [...loc, 'v'], code: 'not_list', input: rawV });
  } else {
    // forEach, not a counted loop: a hole in an array built in code is skipped, as JSON has none.
    rawV.forEach((node: unknown, k) => {
      if (!isNodeId(node)) {
        problems.push({ path: validatorPath({ loc, k }), code: 'pattern_mismatch', input: node, expected: HEX64_PATTERN });
        return;
      }
      const first = seen.get(node);
      if (first) {
        problems.push({ path: validatorPath({ loc, k }), code: 'node_twice', input: node, note: `first at ${validatorPath(first).join('.')}` });
        return;
      }
      seen.set(node, { loc, k });
      v.push(node);
    });
  }
  const i: QuorumSet[] = [];
  const rawI = 'i' in input ? input.i : [];
  if (!Array.isArray(rawI)) {
    problems.push({ path: [...loc, 'i'], code: 'not_list', input: rawI });
  } else if (rawI.length > 0 && depth >= QUORUM_SET_MAX_DEPTH) {
    // Never recurses past the limit, so this walk is as shallow as the limit.
    problems.push(depthProblem([...loc, 'i']));
  } else {
    rawI.forEach((inner: unknown, k) => {
      const parsed = parseLevel(inner, [...loc, 'i', String(k)], depth + 1, problems, seen);
      if (parsed) i.push(parsed);
    });
  }
  if (problems.length > before || typeof t !== 'number') return undefined;
  const entries = v.length + i.length;
  if (t < 1 || t > entries) {
    problems.push({ path: [...loc, 't'], code: 'threshold_range', input: t, limit: entries });
    return undefined;
  }
  return { t, v, i };
}

/**
 * The normal form of a quorum set, the one that is hashed: validators sorted (UTF-16 order), inner sets
 * normalised, an inner set with a single entry replaced by that entry (`{t:1, v:[x]}` is just `x`), and
 * inner sets sorted by their canonical JSON. Same semantics (`sat`, `blocks`), one spelling.
 */
export function normalizeQuorumSet(q: QuorumSet): QuorumSet {
  const v = [...q.v];
  const i: QuorumSet[] = [];
  for (const inner of q.i) {
    const n = normalizeQuorumSet(inner);
    if (entryCount(n) === 1) {
      // A one-entry set has t = 1 and is satisfied exactly when its entry is.
      if (n.v.length === 1) v.push(n.v[0] as string);
      else i.push(n.i[0] as QuorumSet);
    } else {
      i.push(n);
    }
  }
  v.sort();
  const keyed = i.map((set) => ({ set, key: canonicalJson(set) }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { t: q.t, v, i: keyed.map((k) => k.set) };
}

/** SHA-256 hex of the canonical JSON (RFC 8785) of the normalised set: the `slice_hash`. */
export function quorumSetHash(q: QuorumSet): string {
  return createHash('sha256').update(canonicalJson(normalizeQuorumSet(q)), 'utf8').digest('hex');
}
