import { describe, expect, it } from 'vitest';
import { type OpenRelayStore, freshStorePerTest } from './relay-store-contract.js';
import { PEER_NOTE_MAX_CHARS } from '../../server/storage/relay/peer-repository.js';

const node = (n: number) => n.toString(16).padStart(64, '0');
const claim = (n: number, author: string, createdMs = n) => ({
  item_id: node(n),
  type: 'claim' as const,
  kind: 'note',
  title: `t${n}`,
  body: '',
  file_bytes: null,
  media_type: null,
  author,
  bot_id: null,
  origin: null,
  created_ms: createdMs,
  authorship: null,
});

/**
 * The rest of the relay store contract: every repository call not covered by
 * relay-store-contract.ts, so each statement is known to mean the same on SQLite and PostgreSQL.
 */
export function describeRelayRepositoriesContract(name: string, open: OpenRelayStore): void {
  describe(`relay repositories contract: ${name}`, () => {
    const store = freshStorePerTest(open);

    it('nodes: learned and local, invited, oldest first, counted', async () => {
      const { nodes } = store().plainData;
      await nodes.insert({ nodeId: node(1), local: true, name: 'one', registration: '{"r":1}', nowMs: 10 });
      expect(await nodes.insertLearned({ nodeId: node(2), name: 'two', registration: '{}', origin: 'https://peer.example', nowMs: 5 })).toBe(true);
      expect(await nodes.insertLearned({ nodeId: node(2), name: 'again', registration: '{}', origin: 'https://peer.example', nowMs: 6 })).toBe(false);
      await nodes.setInvitedBy(node(1), node(2), 11);
      expect(await nodes.get(node(1))).toEqual({
        node_id: node(1), local: 1, name: 'one', about: '', cred_version: 1, registration: '{"r":1}', origin: null, invited_by: node(2), listed: 0, phone_discoverable: 0, created_ms: 10, updated_ms: 11,
      });
      expect(await nodes.get(node(2))).toMatchObject({ local: 0, name: 'two', origin: 'https://peer.example' });
      expect((await nodes.oldest(5)).map((n) => n.node_id)).toEqual([node(2), node(1)]);
      expect([await nodes.count(), await nodes.countLocal()]).toEqual([2, 1]);
      expect(await nodes.exists(node(3))).toBe(false);
    });

    it('bots: the active ones of an owner, by id', async () => {
      const { nodes, bots } = store().plainData;
      await nodes.insert({ nodeId: node(1), local: true, name: '', registration: '{}', nowMs: 1 });
      await bots.insert({ botId: 'bot_b', owner: node(1), name: 'b', tokenHash: 'hb', nowMs: 3 });
      await bots.insert({ botId: 'bot_a', owner: node(1), name: 'a', tokenHash: 'ha', nowMs: 2 });
      expect(await bots.get('bot_b')).toEqual({ bot_id: 'bot_b', name: 'b', owner: node(1), created_ms: 3 });
      expect(await bots.activeOf(node(1))).toEqual([
        { bot_id: 'bot_a', name: 'a', created_ms: 2 },
        { bot_id: 'bot_b', name: 'b', created_ms: 3 },
      ]);
      expect(await bots.countActive(node(1))).toBe(2);
    });

    it('items and reports: authorship attached once, counts, one report per reporter replaced', async () => {
      const { items, reports } = store().plainData;
      await items.insert(claim(1, node(9)));
      expect(await items.attachAuthorship(node(1), node(8), '{"by":8}')).toBe(false);
      expect(await items.attachAuthorship(node(1), node(9), '{"by":9}')).toBe(true);
      expect(await items.attachAuthorship(node(1), node(9), '{"again":9}')).toBe(false);
      expect((await items.get(node(1)))?.authorship).toBe('{"by":9}');
      expect([await items.countByAuthor(node(9)), await items.count(), await items.exists(node(1))]).toEqual([1, 1, true]);
      await reports.upsert({ item_id: node(1), reporter: node(7), bot_id: null, reason: 'spam', note: 'first', created_ms: 5 });
      await reports.upsert({ item_id: node(1), reporter: node(7), bot_id: 'bot_x', reason: 'abuse', note: 'second', created_ms: 6 });
      expect(await reports.countForItem(node(1))).toBe(1);
      expect(await reports.byReporter(node(7))).toEqual([{ item_id: node(1), reason: 'abuse', note: 'second', bot_id: 'bot_x', created_ms: 6 }]);
    });

    it('votes: other documents, who signed what, items accepted without a node, floors replaced', async () => {
      const { items, votes } = store().plainData;
      await items.insert(claim(1, node(9)));
      await items.insert(claim(2, node(9)));
      const key = { voter: node(5), item: node(1), value: 'yes', phase: 'accept' };
      expect(await votes.insertIfNew(key, '{"sig":"s1"}', null, 1)).toBe(true);
      expect(await votes.insertIfNew({ ...key, item: node(2), phase: 'vote' }, '{"sig":"s0"}', 'https://peer.example', 1)).toBe(true);
      expect(await votes.insertOtherDocument({ ...key, sig: 's2' }, '{"sig":"s2"}', null, 2)).toBe(true);
      expect(await votes.insertOtherDocument({ ...key, sig: 's2' }, '{"sig":"s2"}', null, 3)).toBe(false);
      expect(await votes.otherDocumentCount(key)).toBe(1);
      expect(await votes.otherDocumentsOf(node(1))).toEqual(['{"sig":"s2"}']);
      expect(await votes.docOf(node(1), { voter: node(5), value: 'yes', phase: 'accept' })).toBe('{"sig":"s1"}');
      expect([await votes.hasAnyBy(node(5), node(1)), await votes.hasAnyBy(node(6), node(1)), await votes.has(node(5), node(1), 'no', 'accept')]).toEqual([true, false, false]);
      // Accepted (an accept statement) and not signed by node(6): item 1; item 2 has only a vote.
      expect(await votes.itemsAcceptedWithout(node(6))).toEqual([node(1)]);
      expect(await votes.itemsAcceptedWithout(node(5))).toEqual([]);
      expect([await votes.countByVoter(node(5)), await votes.count()]).toEqual([2, 2]);
      await votes.setFloor(node(1), node(5), { state: 'voted', value: 'yes', acceptedVia: null }, 1);
      await votes.setFloor(node(1), node(5), { state: 'confirmed', value: 'yes', acceptedVia: 'v-blocking' }, 2);
      expect(await votes.floorOf(node(1), node(5))).toEqual({ state: 'confirmed', value: 'yes', acceptedVia: 'v-blocking' });
      expect(await votes.floorOf(node(2), node(5))).toBeUndefined();
    });

    it('events: a vote event names its statement and is read with its document; older events keep their payload (decision 1170)', async () => {
      const s = store();
      const { items, votes } = s.plainData;
      await items.insert(claim(1, node(9)));
      const statement = { voter: node(5), item: node(1), value: 'yes', phase: 'accept' };
      const doc = '{"voter":"v","sig":"s1","hint":{"a":["é"]}}';
      await s.tx(function* () {
        yield* s.appendEvent('item', node(9), node(1), { item: 1 }, 1);
        // As StatementLog stores it: the statement's row, then its event, in one transaction.
        yield* s.data.votes.insertIfNew(statement, doc, null, 2);
        yield* s.appendVoteEvent(statement, doc, 2, 'https://peer.example');
        // An event stored before version 8 (or another document of a statement): its payload as stored.
        yield* s.appendEventJson('vote', node(6), node(1), '{"vote":{"old":true}}', 3);
      });
      const all = await s.plain(s.data.events.after(0, [], 10));
      expect(all.map((e) => [e.kind, e.author, e.subject, e.payload, e.origin, e.created_ms])).toEqual([
        ['item', node(9), node(1), '{"item":1}', null, 1],
        ['vote', node(5), node(1), `{"vote":${doc}}`, 'https://peer.example', 2],
        ['vote', node(6), node(1), '{"vote":{"old":true}}', null, 3],
      ]);
      // By author, and from a cursor: the same rows.
      expect((await s.plain(s.data.events.after(0, [node(5)], 10))).map((e) => e.payload)).toEqual([`{"vote":${doc}}`]);
      expect((await s.plain(s.data.events.after(all[1]!.seq, [], 10))).map((e) => e.author)).toEqual([node(6)]);
      expect(await votes.count()).toBe(1);
      // As stored: no copy on SQLite; on PostgreSQL the old form, which replicas of the previous
      // release read during a rolling upgrade.
      expect(await s.plainSql.value('SELECT payload FROM events WHERE seq = ?', all[1]!.seq)).toBe(s.dialect === 'postgres' ? `{"vote":${doc}}` : '');
      // Outside a transaction a vote event is refused, as every event is.
      expect(() => [...s.appendVoteEvent(statement, doc, 4, null)]).toThrow(/outside a transaction/);
      // A vote event whose statement is gone (only by hand: nothing deletes one) is an error, not an
      // empty payload or one that disagrees with the statements.
      await s.tx(s.appendVoteEvent({ ...statement, phase: 'vote' }, doc, 5, null));
      await expect(s.plain(s.data.events.after(0, [], 10))).rejects.toThrow(/names a statement that is not stored/);
    });

    it('slices: published, replaced, listed by node, quorum sets by hash kept once', async () => {
      const { slices } = store().plainData;
      await slices.put(node(2), { qsetJson: '{"t":1}', hash: 'h1', tAuto: true }, 10);
      await slices.put(node(2), { qsetJson: '{"t":2}', hash: 'h2', tAuto: false, declarationJson: '{"d":1}' }, 20);
      await slices.put(node(1), { qsetJson: '{"t":3}', hash: 'h3', tAuto: false }, 30);
      expect(await slices.get(node(2))).toEqual({ qset: '{"t":2}', hash: 'h2', t_auto: 0, declaration: '{"d":1}' });
      expect(await slices.declaredAt(node(2))).toEqual({ hash: 'h2', updated_ms: 20 });
      expect(await slices.edges(10)).toEqual([
        { node_id: node(1), qset: '{"t":3}', hash: 'h3' },
        { node_id: node(2), qset: '{"t":2}', hash: 'h2' },
      ]);
      await slices.rememberQuorumSet('h2', '{"t":2}');
      await slices.rememberQuorumSet('h2', '{"other":true}');
      expect([await slices.quorumSetJson('h2'), await slices.quorumSetJson('nope')]).toEqual(['{"t":2}', undefined]);
    });

    it('peers: probes recorded, offences up to suspension, reinstated, listed', async () => {
      const { peers } = store().plainData;
      expect(await peers.insertIfNew('https://b.example', node(1), 2)).toBe(true);
      expect(await peers.insertIfNew('https://a.example', null, 1)).toBe(true);
      expect(await peers.insertIfNew('https://a.example', null, 3)).toBe(false);
      await peers.recordProbe('https://a.example', { nowMs: 5, reachable: false, error: 'refused', rejectedEvents: 2 });
      expect(await peers.get('https://a.example')).toMatchObject({ last_probe_ms: 5, reachable: 0, last_error: 'refused', rejected_events: 2, suspended_ms: null });
      expect(await peers.recordOffences('https://a.example', { count: 2, last: 'forged', nowMs: 6, limit: 3 })).toBe(false);
      expect(await peers.recordOffences('https://a.example', { count: 1, last: 'forged again', nowMs: 7, limit: 3 })).toBe(true);
      expect(await peers.get('https://a.example')).toMatchObject({ offences: 3, last_offence: 'forged again', suspended_ms: 7 });
      expect(await peers.reinstate('https://a.example')).toBe(true);
      expect(await peers.reinstate('https://a.example')).toBe(false);
      expect(await peers.get('https://a.example')).toMatchObject({ offences: 0, suspended_ms: null });
      expect((await peers.all()).map((p) => p.url)).toEqual(['https://a.example', 'https://b.example']);
      expect(await peers.count()).toBe(2);
    });

    it("peers: a note quoting the peer's text is stored bounded, with U+0000 and lone surrogates made storable", async () => {
      const { peers } = store().plainData;
      await peers.insertIfNew('https://a.example', null, 1);
      const quoted = `refused: ${'\u0000'}\ud800${'é'.repeat(5000)}`;
      await peers.recordProbe('https://a.example', { nowMs: 2, reachable: true, error: quoted, rejectedEvents: 1 });
      await peers.recordOffences('https://a.example', { count: 1, last: quoted, nowMs: 3, limit: 10 });
      const row = await peers.get('https://a.example');
      for (const note of [row?.last_error, row?.last_offence]) {
        expect(note?.startsWith('refused: \\u0000\ufffdé')).toBe(true);
        expect(Array.from(note ?? '')).toHaveLength(PEER_NOTE_MAX_CHARS);
        expect(note?.endsWith('é…')).toBe(true);
      }
      await peers.recordProbe('https://a.example', { nowMs: 4, reachable: true, error: null, rejectedEvents: 0 });
      expect((await peers.get('https://a.example'))?.last_error).toBeNull();
    });

    it('invites: open ones counted until accepted or expired, newest first', async () => {
      const { social } = store().plainData;
      await social.insertInvite({ code: 'c1', inviter: node(1), nowMs: 1, expiresMs: 100 });
      await social.insertInvite({ code: 'c2', inviter: node(1), nowMs: 2, expiresMs: 10 });
      expect(await social.countOpenInvites(node(1), 5)).toBe(2);
      expect(await social.countOpenInvites(node(1), 50)).toBe(1);
      await social.acceptInvite('c1', node(2), 6);
      expect(await social.countOpenInvites(node(1), 5)).toBe(1);
      expect(await social.invite('c1')).toEqual({ code: 'c1', inviter: node(1), created_ms: 1, expires_ms: 100, accepted_by: node(2), accepted_ms: 6 });
      expect((await social.invitesOf(node(1))).map((i) => i.code)).toEqual(['c2', 'c1']);
    });

    it('invites: pruning deletes the inviter\'s invites expired or accepted at least the kept time ago, and nothing else', async () => {
      const { social } = store().plainData;
      await social.insertInvite({ code: 'expired-long-ago', inviter: node(1), nowMs: 1, expiresMs: 10 });
      await social.insertInvite({ code: 'expired-lately', inviter: node(1), nowMs: 1, expiresMs: 60 });
      await social.insertInvite({ code: 'accepted-long-ago', inviter: node(1), nowMs: 1, expiresMs: 500 });
      await social.insertInvite({ code: 'accepted-lately', inviter: node(1), nowMs: 1, expiresMs: 500 });
      await social.insertInvite({ code: 'open', inviter: node(1), nowMs: 1, expiresMs: 500 });
      await social.insertInvite({ code: 'another-inviter', inviter: node(2), nowMs: 1, expiresMs: 10 });
      await social.acceptInvite('accepted-long-ago', node(3), 50);
      await social.acceptInvite('accepted-lately', node(4), 51);
      // At 100 with 50 kept: gone are those expired or accepted at 50 or before.
      await social.pruneDoneInvites(node(1), 100, 50);
      expect((await social.invitesOf(node(1))).map((i) => i.code).sort()).toEqual(['accepted-lately', 'expired-lately', 'open']);
      expect(await social.invite('another-inviter')).toBeDefined();
      expect(await social.countOpenInvites(node(1), 100)).toBe(1);
    });

    it('invites and pairing tokens are indexed by their node (counted, pruned and listed on every POST /invites and /pair/start)', async () => {
      const s = store();
      const indexes =
        s.dialect === 'sqlite'
          ? await s.plainSql.values<string>("SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('invites_by_inviter', 'pairings_by_node') ORDER BY name")
          : await s.plainSql.values<string>("SELECT indexname FROM pg_indexes WHERE schemaname = 'relay' AND indexname IN ('invites_by_inviter', 'pairings_by_node') ORDER BY indexname");
      expect(indexes).toEqual(['invites_by_inviter', 'pairings_by_node']);
      if (s.dialect === 'sqlite') {
        // SQLite plans the same on an empty table: the count reads the index, not every node's rows.
        const plan = await s.plainSql.allOnce<{ detail: string }>('EXPLAIN QUERY PLAN SELECT COUNT(*) AS n FROM invites WHERE inviter = ? AND accepted_by IS NULL AND expires_ms > ?', node(1), 0);
        expect(plan.map((r) => r.detail).join('\n')).toMatch(/USING INDEX invites_by_inviter/);
      }
    });

    it("exports everything a node owns, table by table", async () => {
      const s = store();
      const { nodes, items, bots, social } = s.plainData;
      await nodes.insert({ nodeId: node(1), local: true, name: '', registration: '{}', nowMs: 1 });
      await items.insert(claim(1, node(1)));
      await s.plainData.votes.insertIfNew({ voter: node(1), item: node(1), value: 'yes', phase: 'vote' }, '{"doc":1}', null, 2);
      await bots.insert({ botId: 'bot_1', owner: node(1), name: 'b', tokenHash: 'h', nowMs: 3 });
      await social.insertInvite({ code: 'c', inviter: node(1), nowMs: 4, expiresMs: 9 });
      await s.tx(s.appendEvent('item', node(1), node(1), {}, 5));
      const exported = await s.plainData.exports.rowsOf(node(1));
      expect(exported.items).toEqual([{ id: node(1), type: 'claim', kind: 'note', title: 't1', body: '', file_bytes: null, media_type: null, bot_id: null, created_ms: 1 }]);
      expect(exported.voteDocs).toEqual(['{"doc":1}']);
      expect(exported.bots).toEqual([{ bot_id: 'bot_1', name: 'b', created_ms: 3, revoked_ms: null }]);
      expect(exported.invites).toEqual([{ code: 'c', created_ms: 4, expires_ms: 9, accepted_by: null, accepted_ms: null }]);
      expect([exported.pairings, exported.reports]).toEqual([[], []]);
      expect(exported.events).toMatchObject([{ kind: 'item', subject: node(1), created_ms: 5 }]);
    });
  });
}
