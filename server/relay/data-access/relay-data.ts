import { BotRepository } from './bot-repository.js';
import { EventRepository } from './event-repository.js';
import { ExportRepository } from './export-repository.js';
import { ItemRepository, ReportRepository } from './item-repository.js';
import { NodeRepository } from './node-repository.js';
import { PeerRepository } from './peer-repository.js';
import { PhoneCodeRepository } from './phone-code-repository.js';
import { PhoneRepository } from './phone-repository.js';
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

  /** `q`: the store's one connection (SQLite's prepared statements, or PostgreSQL's). */
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
  }
}
