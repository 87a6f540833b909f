import { BotRepository } from './bot-repository.js';
import { RelayCountRepository } from './count-repository.js';
import { EventRepository } from './event-repository.js';
import { ExportRepository } from './export-repository.js';
import { ItemRepository, ReportRepository } from './item-repository.js';
import { NodeRepository } from './node-repository.js';
import { PeerRepository } from './peer-repository.js';
import { PhoneCodeRepository } from './phone-code-repository.js';
import { PhoneRepository } from './phone-repository.js';
import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';
import { SliceRepository } from './slice-repository.js';
import { SocialRepository } from './social-repository.js';
import { VoteRepository } from './vote-repository.js';

/**
 * The relay's data-access layer: every SQL statement of the relay lives in a repository here, so
 * route handlers and domain classes speak in typed calls. Repositories never open transactions;
 * the caller wraps what must commit together in `RelayStore.tx`.
 */
export class RelayData {
  readonly nodes: NodeRepository;
  readonly phones: PhoneRepository;
  readonly phoneCodes: PhoneCodeRepository;
  readonly bots: BotRepository;
  readonly items: ItemRepository;
  readonly reports: ReportRepository;
  readonly votes: VoteRepository;
  readonly slices: SliceRepository;
  readonly social: SocialRepository;
  readonly events: EventRepository;
  readonly peers: PeerRepository;
  readonly exports: ExportRepository;
  /** The public counts, none walking its table (decision 1100). */
  readonly counts: RelayCountRepository;

  /** `q`: the steps vocabulary of the store's dialect. */
  constructor(q: RelaySql) {
    this.nodes = new NodeRepository(q);
    this.phones = new PhoneRepository(q);
    this.phoneCodes = new PhoneCodeRepository(q);
    this.bots = new BotRepository(q);
    this.items = new ItemRepository(q);
    this.reports = new ReportRepository(q);
    this.votes = new VoteRepository(q);
    this.slices = new SliceRepository(q);
    this.social = new SocialRepository(q);
    this.events = new EventRepository(q);
    this.peers = new PeerRepository(q);
    this.exports = new ExportRepository(q);
    this.counts = new RelayCountRepository(q);
  }
}

/** A repository whose steps run on their own: each method answers a promise of what its steps return. */
export type Plain<R> = { [K in keyof R]: R[K] extends (...args: infer A) => Steps<infer T> ? (...args: A) => Promise<T> : R[K] };

/** Every repository of the relay, `plainly` run (`RelayStore.plainData`). */
export type PlainData = { [K in keyof RelayData]: Plain<RelayData[K]> };

/**
 * `target` with each of its step methods answering a promise of what its steps return, run by
 * `plain` (other own properties copied): for a caller that needs one repository call and no
 * transaction around it (decision 0700).
 */
export function plainly<R extends object>(target: R, plain: <T>(steps: Steps<T>) => Promise<T>): Plain<R> {
  const out: Record<string, unknown> = { ...(target as object) };
  const prototype = Object.getPrototypeOf(target) as Record<string, unknown>;
  for (const method of Object.getOwnPropertyNames(prototype)) {
    const fn = prototype[method];
    if (method === 'constructor' || typeof fn !== 'function') continue;
    out[method] = (...args: unknown[]) => plain((fn as (...a: unknown[]) => Steps<unknown>).apply(target, args));
  }
  return out as Plain<R>;
}

/** Every repository of `data`, `plainly` run. */
export function plainData(data: RelayData, plain: <T>(steps: Steps<T>) => Promise<T>): PlainData {
  const out: Record<string, unknown> = {};
  for (const [name, repository] of Object.entries(data) as [string, object][]) out[name] = plainly(repository, plain);
  return out as PlainData;
}
