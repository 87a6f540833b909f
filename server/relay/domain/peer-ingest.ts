import type { Clock } from '../../../core/clock.js';
import type { FileStore } from './file-store.js';
import { itemRecord } from './item-record.js';
import { unstorableText } from './storable-text.js';
import { RelayRefusal } from './relay-errors.js';
import type { Problem } from '../../../core/relay/problem.js';
import { claimId, isItemId, validateClaim } from '../../../core/relay/claim.js';
import { isNodeId, nodeIdProblem } from '../../../core/relay/node-id.js';
import { parseVote, verifyVote } from '../../../core/relay/vote.js';
import { quorumSetHash, validateQuorumSet } from '../../../core/relay/quorum-set.js';
import { voteTimeProblem } from './statement-time.js';
import { coreProblemMessage } from '../../../wire/problem-detail.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { codePointText, registerBody } from '../../../wire/relay/relay-schemas.js';
import type { Steps } from '../../storage/sql-steps.js';
import type { RelayStore } from '../relay-store.js';
import { verifySignedDocument } from './signed-document.js';
import { authorshipProblem, sliceDeclarationOrProblem } from './signed-statements.js';
import type { Voting } from './voting.js';

/** One event of a peer's feed, as it arrived (nothing in it is trusted yet). */
export interface WireEvent {
  seq: number;
  kind: string;
  author: string;
  subject: string;
  data: unknown;
}

/**
 * What became of one peer event:
 * - `stored`: stored, or already known (a duplicate or a stale declaration changes nothing);
 * - `skipped`: not taken, and not the peer's fault: an item or slice published without its
 *   author's signed statement (honest relays hold such items from clients that do not sign), a vote
 *   for an item this relay does not hold or from too far in the future, an event kind it does not know;
 * - `refused`: the document is false (a signature that does not verify, an id or hash that does not
 *   match its content, an author, voter or node nobody registered, a malformed document). Nothing of
 *   it is stored, and it counts against the peer's standing: an honest relay verifies what it stores
 *   and so never serves one.
 */
export type IngestOutcome = { kind: 'stored' } | { kind: 'skipped'; reason: string } | { kind: 'refused'; reason: string };

const stored: IngestOutcome = { kind: 'stored' };
const skip = (reason: string): IngestOutcome => ({ kind: 'skipped', reason });
const refuse = (reason: string): IngestOutcome => ({ kind: 'refused', reason });
/** The first problem's message, as a client's 422 would say it. */
const firstMessage = (problems: readonly Problem[]) => (problems[0] === undefined ? '' : coreProblemMessage(problems[0]));

export interface PeerIngestOptions {
  store: RelayStore;
  clock: Clock;
  files: FileStore;
  voting: Voting;
  selfNodeId: string;
}

/** The item of an `item` event, as far as it can be read. */
function itemOf(ev: WireEvent): Record<string, unknown> {
  const item = (ev.data as { item?: unknown } | null)?.item;
  return item !== null && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : {};
}

/**
 * Verifies peer events and stores what is true, each in the caller's transaction (federation runs
 * one per page). Every document is checked against its signer's key: registrations, x.item/1
 * authorship, x.slice/1 declarations and x.vote/1 statements; content against its id or hash.
 */
export class PeerIngest {
  constructor(private readonly o: PeerIngestOptions) {}

  /**
   * Why a registration event is refused, or null. Also used before a page's transaction, to know
   * which nodes the page itself introduces (a file is fetched only for an author that will be known).
   */
  registrationProblem(ev: WireEvent): string | null {
    const parsed = registerBody.safeParse((ev.data as { registration?: unknown } | null)?.registration);
    if (!parsed.success) return 'registration document malformed';
    const problem = nodeIdProblem(parsed.data.node_id);
    if (problem) return problem;
    if (!verifySignedDocument(parsed.data, parsed.data.node_id)) return 'registration signature does not verify';
    return null;
  }

  /**
   * Whether a file item's bytes should be fetched: its authorship statement verifies and its author
   * is known or registered earlier in the same page. Anything else is skipped or refused without
   * downloading a byte, so a forged file item never leaves a file behind.
   */
  async fileWorthFetching(ev: WireEvent, authorsInPage: ReadonlySet<string>): Promise<boolean> {
    const item = itemOf(ev);
    if (ev.kind !== 'item' || item.type !== 'file' || !isItemId(item.id) || !isNodeId(item.author)) return false;
    if (item.authorship === undefined || item.authorship === null) return false;
    // Its event is skipped (ingest): its bytes would be left without an item.
    if (unstorableText(ev.data) !== null) return false;
    if ((await this.o.store.plainData.items.exists(item.id)) || this.fileItemProblem(item) !== null) return false;
    return authorsInPage.has(item.author) || (await this.o.store.plainData.nodes.exists(item.author));
  }

  /**
   * Verifies and stores one peer event: steps of a transaction. `files` maps fetched file ids to
   * null (stored, and in this replica's directory) or why they were refused.
   */
  *ingest(ev: WireEvent, origin: string, files: ReadonlyMap<string, string | null>): Steps<IngestOutcome> {
    const data = withoutUnstorableHint(ev.kind, (ev.data ?? {}) as Record<string, unknown>);
    // True or not, it cannot be stored everywhere (decision 0490); the page goes on without it.
    const unstorable = unstorableText(data);
    // The location as JSON: a key holding the text itself must not carry it into `last_error`.
    if (unstorable !== null) return skip(`holds ${unstorable.problem === 'nul' ? 'U+0000' : 'a lone UTF-16 surrogate'} in data at ${shownJson(unstorable.loc, PEER_TEXT_SHOWN_MAX_CHARS)}, which relays do not store`);
    try {
      switch (ev.kind) {
        case 'node':
          return yield* this.node(data, origin);
        case 'item':
          return yield* this.item(itemOf(ev), origin, files);
        case 'vote':
          return yield* this.vote(data, origin);
        case 'slice':
          return yield* this.slice(data, origin);
        default:
          return skip(`unknown event kind ${eventKindLabel(ev.kind)}`);
      }
    } catch (cause) {
      // The store's own refusals (an unknown slice_hash) say this relay cannot use it, not that it is false.
      if (cause instanceof RelayRefusal) return skip(cause.message);
      throw cause;
    }
  }

  private *node(data: Record<string, unknown>, origin: string): Steps<IngestOutcome> {
    const problem = this.registrationProblem({ seq: 0, kind: 'node', author: '', subject: '', data });
    if (problem !== null) return refuse(problem);
    const reg = registerBody.parse(data.registration);
    const nowMs = this.o.clock.nowMs();
    if (yield* this.o.store.data.nodes.insertLearned({ nodeId: reg.node_id, name: reg.name ?? '', registration: JSON.stringify(reg), origin, nowMs })) {
      yield* this.o.store.appendEvent('node', reg.node_id, reg.node_id, { registration: reg }, nowMs, origin);
    }
    return stored;
  }

  /** Checks of a file item that need no bytes: title, and the authorship statement. */
  private fileItemProblem(item: Record<string, unknown>): string | null {
    const title = codePointText(relayLimits.titleMaxChars, { singleLine: true }).safeParse(item.title ?? '');
    if (!title.success) return 'file title invalid';
    if (item.authorship === undefined || item.authorship === null) return null;
    const mediaType = typeof item.media_type === 'string' ? item.media_type : null;
    return authorshipProblem(item.authorship, { id: item.id as string, type: 'file', author: item.author as string, title: title.data, media_type: mediaType });
  }

  private *item(item: Record<string, unknown>, origin: string, files: ReadonlyMap<string, string | null>): Steps<IngestOutcome> {
    const { nodes, items } = this.o.store.data;
    const id = item.id;
    const author = item.author;
    if (!isItemId(id) || !isNodeId(author)) return refuse('item without a well-formed id or author');
    let row: { type: 'claim' | 'file'; kind: string; title: string; body: string; bytes: number | null; media: string | null };
    if (item.type === 'claim') {
      const checked = validateClaim({ kind: item.kind, title: item.title, body: item.body });
      if (!checked.ok) return refuse(`invalid claim: ${firstMessage(checked.problems)}`);
      if (claimId(checked.value) !== id) return refuse('claim id does not match its content');
      if (item.authorship === undefined || item.authorship === null) return skip("claim posted without its author's signed statement (x.item/1); not taken");
      const problem = authorshipProblem(item.authorship, { id, type: 'claim', author, title: checked.value.title, media_type: null });
      if (problem !== null) return refuse(problem);
      row = { type: 'claim', kind: checked.value.kind, title: checked.value.title, body: checked.value.body, bytes: null, media: null };
    } else if (item.type === 'file') {
      // Checked before the bytes (which were fetched only if these pass): an unsigned file is not even downloaded.
      const problem = this.fileItemProblem(item);
      if (problem !== null) return refuse(problem);
      if (item.authorship === undefined || item.authorship === null) return skip("file posted without its author's signed statement (x.item/1); not fetched");
      if (!(yield* nodes.exists(author))) return refuse('item by a node this relay does not know');
      if (yield* items.exists(id)) return stored;
      const refused = files.get(id);
      // The page reader copied every file it took into this replica's directory before the transaction.
      const bytes = refused === null ? this.o.files.localSizeOf(id) : undefined;
      if (refused !== null || bytes === undefined) return refuse(`file refused: ${refused ?? 'content missing'}`);
      row = { type: 'file', kind: 'file', title: String(item.title ?? ''), body: '', bytes, media: item.media_type as string };
    } else return refuse('unknown item type');
    if (!(yield* nodes.exists(author))) return refuse('item by a node this relay does not know');
    // Checked before this early return: a forgery of an item this relay holds still counts against the peer.
    if (yield* items.exists(id)) return stored;
    const nowMs = this.o.clock.nowMs();
    const authorship = JSON.stringify(item.authorship);
    yield* items.insert({ item_id: id, type: row.type, kind: row.kind, title: row.title, body: row.body, file_bytes: row.bytes, media_type: row.media, author, bot_id: null, origin, created_ms: nowMs, authorship });
    // Forwarded as stored (what was verified), not as the peer spelled it.
    yield* this.o.store.appendEvent('item', author, id, { item: itemRecord((yield* items.get(id))!) }, nowMs, origin);
    return stored;
  }

  private *vote(data: Record<string, unknown>, origin: string): Steps<IngestOutcome> {
    const { nodes, items } = this.o.store.data;
    const parsed = parsePeerVote(data.vote);
    if (!parsed.ok) return refuse(`malformed vote: ${firstMessage(parsed.problems)}`);
    const vote = parsed.value;
    const nowMs = this.o.clock.nowMs();
    const timeProblem = voteTimeProblem(vote.created_at, nowMs);
    if (timeProblem !== null) return skip(timeProblem);
    if (!verifyVote(vote)) return refuse('vote signature does not verify');
    if (!(yield* nodes.exists(vote.voter))) return refuse('vote by a node this relay does not know');
    if (!(yield* items.exists(vote.item))) return skip('vote for an item this relay does not have');
    // A statement naming its slice by hash travels with the quorum set (GET /events adds it): taken
    // only when it hashes to what the voter signed, so it is the voter's word, not the peer's.
    if (vote.slice_hash !== undefined && !(yield* this.o.voting.quorumSetByHash(vote.slice_hash))) {
      const carried = validateQuorumSet(data.slice, { self: vote.voter });
      if (carried.ok && quorumSetHash(carried.value) === vote.slice_hash) yield* this.o.voting.rememberQuorumSet(carried.value);
    }
    const result = yield* this.o.voting.storeVote(vote, origin, nowMs);
    if ((result.stored || result.keptAnotherDocument) && vote.voter !== this.o.selfNodeId) yield* this.o.voting.retallySelf(vote.item, nowMs);
    return stored;
  }

  private *slice(data: Record<string, unknown>, origin: string): Steps<IngestOutcome> {
    if (data.declaration === undefined || data.declaration === null) return skip("slice published without the node's signed declaration (x.slice/1); not taken");
    const checked = sliceDeclarationOrProblem(data.declaration);
    if (!checked.ok) return refuse(checked.problem);
    const declaration = checked.value;
    if (data.node_id !== declaration.node_id || data.slice_hash !== declaration.slice_hash || data.updated_ms !== declaration.updated_ms) {
      return refuse('slice event fields disagree with its signed declaration');
    }
    if (!(yield* this.o.store.data.nodes.exists(declaration.node_id))) return refuse('slice of a node this relay does not know');
    const nowMs = this.o.clock.nowMs();
    if (declaration.updated_ms > nowMs + relayLimits.proofMaxSkewSeconds * 1000) return skip('slice declared in the future (updated_ms ahead of this relay clock)');
    yield* this.o.voting.applyDeclaration(declaration, origin, nowMs);
    return stored;
  }
}

/** The kinds `ingest` stores. */
const EVENT_KINDS: ReadonlySet<unknown> = new Set(['node', 'item', 'vote', 'slice']);
/**
 * Characters of a peer's own text (an unknown kind, the location of unstorable text) a probe's
 * `last_error` keeps, as JSON: the peer chose it, and GET /reach shows it to anyone.
 */
const PEER_TEXT_SHOWN_MAX_CHARS = 64;

/**
 * A peer event's kind as a probe's `last_error` names it: a known kind as it is, any other as JSON,
 * cut. Written as sent, a kind holding U+0000 made recording the probe fail on PostgreSQL (a 500 on
 * /federation/pull), and a kind of 1 MB made every GET /reach answer 2 MB.
 */
export function eventKindLabel(kind: unknown): string {
  return EVENT_KINDS.has(kind) ? (kind as string) : shownJson(kind, PEER_TEXT_SHOWN_MAX_CHARS);
}

/** `value` as JSON (which escapes U+0000 and lone surrogates), cut to `maxChars` and marked `…`. */
export function shownJson(value: unknown, maxChars: number): string {
  const json = JSON.stringify(value) ?? 'none';
  if (json.length <= maxChars) return json;
  // Not between the halves of a surrogate pair: the cut must stay storable text.
  const cut = json.slice(0, maxChars);
  return `${/[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

/**
 * A vote's data without its hint when the hint holds text relays do not store (U+0000, a lone
 * surrogate): the hint is unsigned, so the vote is kept without it, as one over the hint's bounds
 * is (decisions 0435, 0490).
 */
function withoutUnstorableHint(kind: unknown, data: Record<string, unknown>): Record<string, unknown> {
  const vote = data.vote;
  if (kind !== 'vote' || vote === null || typeof vote !== 'object' || unstorableText((vote as { hint?: unknown }).hint) === null) return data;
  const { hint: _dropped, ...signed } = vote as Record<string, unknown>;
  return { ...data, vote: signed };
}

/**
 * `parseVote`, but a vote that only its hint keeps out (too deep or too long, decision 0435) is
 * taken without the hint. The hint is unsigned and relays may change it (scp-s5), so a peer holding
 * such a vote (a relay of an older version took it from a client) has not lied: the signed vote is
 * kept and the hint dropped, instead of counting an offence against the peer.
 */
function parsePeerVote(doc: unknown): ReturnType<typeof parseVote> {
  const parsed = parseVote(doc);
  if (parsed.ok || !parsed.problems.every((problem) => problem.path[0] === 'hint')) return parsed;
  const { hint: _dropped, ...signed } = doc as Record<string, unknown>;
  return parseVote(signed);
}
