import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type Clock, systemClock } from '../../core/clock.js';
import { type ItemAuthorship, signItemAuthorship } from '../../core/relay/item-authorship.js';
import { type NodeKey, generateNodeKey } from '../../core/relay/node-id.js';
import type { QuorumSet } from '../../core/relay/quorum-set.js';
import { type SliceDeclaration, signSliceDeclaration } from '../../core/relay/slice-declaration.js';
import { type Vote, signVote } from '../../core/relay/vote.js';
import { claimId } from '../../core/relay/claim.js';
import { registerSchema, relayLimits, sessionSchema } from '../../wire/relay/relay-facts.js';
import { type RunningRelay, type StartRelayServerOptions, startRelayServer as startRelayServerWithDefaults } from '../../server/relay/relay-service.js';
import { signDocument } from '../../server/relay/domain/signed-document.js';
import { RelayClient } from '../../clients/relay/relay-client.js';
import { memoryLogger } from '../../server/http/logger.js';

/**
 * Test kit for the relay: signed documents built the way a real client must build them (for tests
 * that send them as they are, or spoiled), a plain HTTP helper (`call`) and relays started for a
 * test (`relayForTests`: one relay for a whole test file, with its nodes). Registering and posting go through the one relay client (`clients/relay/relay-client.ts`).
 * Test-only (it lives under test/support/, not next to the service), used by the relay's tests and
 * benchmarks.
 */

/** The one relay client for `baseUrl`, signing with `clock` (registrations name `baseUrl`, as a started relay does). */
export function relayClient(baseUrl: string, clock: Clock): RelayClient {
  return new RelayClient({ baseUrl, clock, selfUrl: baseUrl.replace(/\/+$/, '') });
}

/** A fresh temporary data dir; `remove()` deletes it. */
export function tempDataDir(prefix = 'relay-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** Calls a relay over real HTTP. `auth` is the full Authorization header value. */
export async function call<T = Record<string, unknown>>(
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; auth?: string; headers?: Record<string, string>; rawBody?: RequestInit["body"] } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth !== undefined) headers.authorization = options.auth;
  let body: RequestInit["body"] | undefined = options.rawBody;
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (pages, PNG): the caller reads `text`.
  }
  return { status: response.status, body: parsed as T, headers: response.headers, text };
}

/** A node with its key and, once registered, its human Authorization header. */
export interface TestNode extends NodeKey {
  auth: string;
}

/** Unix seconds on `clock`. */
export function nowSeconds(clock: Clock): number {
  return Math.floor(clock.nowMs() / 1000);
}

/** A signed x.register/1 document for `relayBaseUrl`. */
export function registrationFor(key: NodeKey, relayBaseUrl: string, clock: Clock, name?: string): Record<string, unknown> {
  return signDocument({ schema: registerSchema, node_id: key.nodeId, relay: relayBaseUrl, created_at: nowSeconds(clock), ...(name !== undefined ? { name } : {}) }, key.secretKey);
}

/** A signed x.session/1 document. */
export function sessionFor(key: NodeKey, relayBaseUrl: string, clock: Clock): Record<string, unknown> {
  return signDocument({ schema: sessionSchema, node_id: key.nodeId, relay: relayBaseUrl, created_at: nowSeconds(clock) }, key.secretKey);
}

/** Registers a fresh (or the given) key and returns it with its credential header. */
export async function registerNode(relay: { baseUrl: string }, clock: Clock, options: { name?: string; key?: NodeKey } = {}): Promise<TestNode> {
  const { node, answer } = await relayClient(relay.baseUrl, clock).raw.register({ ...options, key: options.key ?? generateNodeKey() });
  if (!node || (answer.status !== 201 && answer.status !== 200)) throw new Error(`register failed: ${answer.status} ${answer.text}`);
  return { nodeId: node.nodeId, secretKey: node.secretKey, auth: node.authorization };
}

/** A signed vote by `key`. */
export function voteBy(key: NodeKey, item: string, value: 'yes' | 'no', phase: 'vote' | 'accept' | 'confirm', slice: QuorumSet, clock: Clock): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value, phase, slice, created_at: nowSeconds(clock) }, key.secretKey);
}

/** `key`'s signed x.item/1 statement that it authored the claim. */
export function claimAuthorship(key: NodeKey, claim: { kind: string; title: string; body: string }): ItemAuthorship {
  return signItemAuthorship({ schema: 'x.item/1', item: claimId(claim), type: 'claim', author: key.nodeId }, key.secretKey);
}

/** `key`'s signed x.item/1 statement that it authored a file (title and media type as the relay stores them). */
export function fileAuthorship(key: NodeKey, file: { id: string; title: string; mediaType?: string }): ItemAuthorship {
  return signItemAuthorship({ schema: 'x.item/1', item: file.id, type: 'file', author: key.nodeId, title: file.title, media_type: file.mediaType ?? 'application/octet-stream' }, key.secretKey);
}

/** `key`'s signed x.slice/1 declaration of `slice` at `updatedMs`. */
export function sliceDeclarationBy(key: NodeKey, slice: { t: number; v: string[]; i?: QuorumSet[] }, updatedMs: number): SliceDeclaration {
  return signSliceDeclaration({ node_id: key.nodeId, slice: { i: [], ...slice }, updated_ms: updatedMs }, key.secretKey);
}

/**
 * Posts a claim and returns its id. Given a node (its key and credential), the claim carries the
 * node's signed authorship, as a client must for the item to travel to other relays; given only a
 * credential, it is posted without one (it then stays on this relay).
 */
export async function postClaim(relay: { baseUrl: string }, node: TestNode | string, claim: { kind: string; title: string; body: string }): Promise<string> {
  // A claim carries no date: the client's clock is not used.
  const client = relayClient(relay.baseUrl, systemClock);
  const answer =
    typeof node === 'string'
      ? await client.raw.request('POST', '/items', { json: claim, auth: node })
      : await client.raw.postClaim({ nodeId: node.nodeId, secretKey: node.secretKey, authorization: node.auth }, claim);
  const id = (answer.json as { id?: unknown } | undefined)?.id;
  if ((answer.status !== 201 && answer.status !== 200) || typeof id !== 'string') throw new Error(`post claim failed: ${answer.status} ${answer.text}`);
  return id;
}

/**
 * Where the relays this test file starts keep their tables: SQLite in their data dir (the default),
 * or, once a file called `storeRelaysOnPostgres` (test/support/relays-on-postgres.ts), one
 * PostgreSQL database per data dir, so that a relay restarted on the same data dir finds its data.
 */
const postgresRelays: { createDatabase?: () => Promise<string>; urlByDataDir: Map<string, string> } = { urlByDataDir: new Map() };

/** From now on, relays started without a `databaseUrl` get a database from `createDatabase` (one per data dir). */
export function storeRelaysOnPostgres(createDatabase: () => Promise<string>): void {
  postgresRelays.createDatabase = createDatabase;
}

/** The PostgreSQL database of the relay started on `dataDir`, or undefined when it is on SQLite. */
export function relayDatabaseUrl(dataDir: string): string | undefined {
  return postgresRelays.urlByDataDir.get(dataDir);
}

/**
 * The store options of a relay on `dataDir`: none (SQLite in the data dir), or, in a file that
 * stores its relays on PostgreSQL, the `databaseUrl` of that data dir's database (made the first
 * time). For tests that call `createRelayService` themselves; the kit's `startRelayServer` uses it.
 */
export async function relayStoreOptions(dataDir: string): Promise<{ databaseUrl?: string }> {
  if (!postgresRelays.createDatabase) return {};
  const databaseUrl = postgresRelays.urlByDataDir.get(dataDir) ?? (await postgresRelays.createDatabase());
  postgresRelays.urlByDataDir.set(dataDir, databaseUrl);
  return { databaseUrl };
}

/**
 * `startRelayServer` with per-client rate limits far above what a test file does from one loopback
 * address on a clock that barely moves, unless the test sets its own (the rate-limit tests set the defaults).
 */
export async function startRelayServer(options: StartRelayServerOptions): Promise<RunningRelay> {
  const store = options.databaseUrl === undefined ? await relayStoreOptions(options.dataDir) : {};
  return startRelayServerWithDefaults({ ...options, ...store, rateLimits: { registrationsPerMinute: 100_000, signInsPerMinute: 100_000, ...options.rateLimits } });
}

/** One relay for a test file's tests (`relayForTests`): its nodes are properties named as they were registered. */
export type RelayForTests<Name extends string> = {
  /** The running relay (started in the file's `beforeAll`; read before then, any property throws). */
  readonly relay: RunningRelay;
  /** Its data dir (a fresh temporary one, removed after the file's tests). */
  readonly dataDir: string;
} & { readonly [N in Name]: TestNode };

export interface RelayForTestsOptions<Name extends string> {
  clock: Clock;
  /** Nodes registered once the relay is up, in order, each with its name as its profile name. */
  nodes?: readonly Name[];
  /** Prefix of the temporary data dir's name. */
  dataDirPrefix?: string;
  /** More options of the relay (the logger defaults to a `memoryLogger()`). */
  relay?: Omit<StartRelayServerOptions, 'clock' | 'dataDir'>;
}

// Every property of the values `relayForTests` hands out before they exist (the compiler checks the lists are whole).
const runningRelayKeys: Record<keyof RunningRelay, true> = { url: true, baseUrl: true, humanUrl: true, service: true, close: true };
const testNodeKeys: Record<keyof TestNode, true> = { nodeId: true, secretKey: true, auth: true };

/**
 * A stand-in for a value made later (in a `beforeAll`), so that a test file can name it at its top:
 * each property reads the value's own when read, and throws, saying so, before the value is made.
 */
function madeLater<T extends object>(what: string, keys: Record<keyof T, true>, made: () => T | undefined): T {
  const view = {} as T;
  for (const key of Object.keys(keys) as (keyof T)[]) {
    Object.defineProperty(view, key, {
      enumerable: true,
      get: () => {
        const value = made();
        if (value === undefined) throw new Error(`${what} is made in the file's beforeAll (relayForTests): read it in a test or a later hook`);
        const property = value[key];
        return typeof property === 'function' ? property.bind(value) : property;
      },
    });
  }
  return view;
}

/**
 * The start-up most relay test files share: a relay on a fresh data dir started (through the kit's
 * `startRelayServer`, so on PostgreSQL where the file asked for it) and `nodes` registered in a
 * `beforeAll`; closed and its data dir removed in an `afterAll`. Call it at the top of the file,
 * before hooks that use it (they then run after its start, and their after-hooks before its close):
 * `const { relay, alice } = relayForTests({ clock, nodes: ['alice'] })`.
 */
export function relayForTests<const Name extends string = never>(options: RelayForTestsOptions<Name>): RelayForTests<Name> {
  const names = options.nodes ?? [];
  for (const name of names) if (name === 'relay' || name === 'dataDir') throw new Error(`relayForTests: a node may not be called "${name}" (the fixture's own property)`);
  const data = tempDataDir(options.dataDirPrefix);
  let relay: RunningRelay | undefined;
  const nodes = new Map<string, TestNode>();
  beforeAll(async () => {
    relay = await startRelayServer({ clock: options.clock, dataDir: data.dir, logger: memoryLogger(), ...options.relay });
    for (const name of names) nodes.set(name, await registerNode(relay, options.clock, { name }));
  });
  afterAll(async () => {
    await relay?.close();
    data.remove();
  });
  const fixture: Record<string, unknown> = { relay: madeLater('the relay', runningRelayKeys, () => relay), dataDir: data.dir };
  for (const name of names) fixture[name] = madeLater(`node ${name}`, testNodeKeys, () => nodes.get(name));
  return fixture as RelayForTests<Name>;
}

export { relayLimits, type RunningRelay, type StartRelayServerOptions };
