import { describe, expect, it } from 'vitest';
import { type Problem, type Validated, problemCodes, RelayError } from '../core/relay/problem.js';
import { authorshipMismatch, parseItemAuthorship, signItemAuthorship } from '../core/relay/item-authorship.js';
import { canonicalJson } from '../core/relay/canonical-json.js';
import { nodeKeyFromSecret } from '../core/relay/node-id.js';
import { parseSliceDeclaration, signSliceDeclaration } from '../core/relay/slice-declaration.js';
import { parseVote, signVote } from '../core/relay/vote.js';
import { validateClaim } from '../core/relay/claim.js';
import { validateQuorumSet } from '../core/relay/quorum-set.js';
import { coreProblemsToValidation } from './problem-detail.js';

/**
 * The relay's 422 answers for the core's problems, byte for byte: the entries the core and its
 * translator answered before the core stopped writing pydantic's words itself (decision 0615),
 * kept here so a drifting message, type, `ctx` or key order fails, naming the case. Every code
 * the core has is answered by at least one case.
 */
const key = nodeKeyFromSecret(new Uint8Array(32).fill(7));
const other = nodeKeyFromSecret(new Uint8Array(32).fill(9));
const third = nodeKeyFromSecret(new Uint8Array(32).fill(11));
const itemId = 'a'.repeat(64);
const vote = signVote(
  { schema: 'x.vote/1', scheme: 'scp-s5', item: itemId, voter: key.nodeId, value: 'yes', phase: 'vote', slice: { t: 1, v: [other.nodeId], i: [] }, created_at: 1700000000 },
  key.secretKey,
);
const { slice: _slice, ...voteWithoutSlice } = vote;
const nestedLists = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));
function nestedSets(depth: number): unknown {
  let q: unknown = { t: 1, v: [third.nodeId] };
  for (let k = 1; k < depth; k++) q = { t: 1, i: [q] };
  return q;
}
const claimDoc = signItemAuthorship({ schema: 'x.item/1', item: itemId, type: 'claim', author: key.nodeId }, key.secretKey);
const fileDoc = signItemAuthorship({ schema: 'x.item/1', item: itemId, type: 'file', author: key.nodeId, title: 'fw.bin', media_type: 'application/octet-stream' }, key.secretKey);
const file = { id: itemId, type: 'file' as const, author: key.nodeId, title: 'fw.bin', media_type: 'application/octet-stream' as string | null };
const declaration = signSliceDeclaration({ node_id: key.nodeId, slice: { t: 1, v: [other.nodeId], i: [] }, updated_ms: 1 }, key.secretKey);

/** What the routes answer for an authorship statement that names another item: its problem under `authorship`. */
function mismatch(...args: Parameters<typeof authorshipMismatch>): { where: string[]; problems: Problem[] } {
  const problem = authorshipMismatch(...args);
  return { where: ['body', 'authorship'], problems: problem === null ? [] : [problem] };
}

/** Problems of the relay service's own rules, under `where`. */
function at(where: (string | number)[], ...problems: Problem[]): { where: (string | number)[]; problems: Problem[] } {
  return { where, problems };
}

function problemsOf(result: Validated<unknown> | { where: (string | number)[]; problems: Problem[] }): { where: (string | number)[]; problems: Problem[] } {
  if ('where' in result) return result;
  return { where: ['body'], problems: result.ok ? [] : result.problems };
}

const CASES: Array<[string, Validated<unknown> | { where: (string | number)[]; problems: Problem[] }, unknown[]]> = [
    ["claim missing all", validateClaim({}), [
      {"type": "missing", "loc": ["body", "kind"], "msg": "Field required", "input": null},
      {"type": "missing", "loc": ["body", "title"], "msg": "Field required", "input": null},
      {"type": "missing", "loc": ["body", "body"], "msg": "Field required", "input": null},
    ]],
    ["claim not object", validateClaim([1]), [
      {"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be a valid dictionary or object to extract fields from", "input": [1]},
    ]],
    ["claim types", validateClaim({ kind: 1, title: null, body: 'a\ud800' }), [
      {"type": "string_type", "loc": ["body", "kind"], "msg": "Input should be a valid string", "input": 1},
      {"type": "string_type", "loc": ["body", "title"], "msg": "Input should be a valid string", "input": null},
      {"type": "string_unicode", "loc": ["body", "body"], "msg": "Input should be a valid string, it holds a lone UTF-16 surrogate", "input": "a\ud800"},
    ]],
    ["claim line breaks", validateClaim({ kind: 'a\nb', title: 'x\ry', body: '' }), [
      {"type": "value_error", "loc": ["body", "kind"], "msg": "Value error, kind must not contain a line break", "input": "a\nb"},
      {"type": "value_error", "loc": ["body", "title"], "msg": "Value error, title must not contain a line break", "input": "x\ry"},
    ]],
    ["claim unknown kind", validateClaim({ kind: 'rumour', title: '', body: 'x'.repeat(32001), extra: [1] }), [
      {"type": "literal_error", "loc": ["body", "kind"], "msg": "Input should be 'statement', 'question', 'measurement', 'observation', 'report', 'firmware-result' or 'proposal'", "input": "rumour", "ctx": {"expected": "'statement', 'question', 'measurement', 'observation', 'report', 'firmware-result' or 'proposal'"}},
      {"type": "string_too_short", "loc": ["body", "title"], "msg": "String should have at least 1 character", "input": "", "ctx": {"min_length": 1}},
      {"type": "string_too_long", "loc": ["body", "body"], "msg": "String should have at most 32000 characters", "input": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\u2026", "ctx": {"max_length": 32000}},
      {"type": "extra_forbidden", "loc": ["body", "extra"], "msg": "Extra inputs are not permitted", "input": [1]},
    ]],
    ["vote fields", parseVote({ ...vote, schema: 'x.vote/2', scheme: 'x', item: 'AB', voter: 5, value: 'maybe', phase: 'p', created_at: 1.5, sig: 'short', extra: true }), [
      {"type": "literal_error", "loc": ["body", "schema"], "msg": "Input should be 'x.vote/1'", "input": "x.vote/2", "ctx": {"expected": "'x.vote/1'"}},
      {"type": "literal_error", "loc": ["body", "scheme"], "msg": "Input should be 'scp-s5'", "input": "x", "ctx": {"expected": "'scp-s5'"}},
      {"type": "string_pattern_mismatch", "loc": ["body", "item"], "msg": "String should match pattern '^[0-9a-f]{64}$' (an item id, SHA-256 hex)", "input": "AB", "ctx": {"pattern": "^[0-9a-f]{64}$"}},
      {"type": "string_pattern_mismatch", "loc": ["body", "voter"], "msg": "String should match pattern '^[0-9a-f]{64}$' (a node_id)", "input": 5, "ctx": {"pattern": "^[0-9a-f]{64}$"}},
      {"type": "literal_error", "loc": ["body", "value"], "msg": "Input should be 'yes' or 'no'", "input": "maybe", "ctx": {"expected": "'yes' or 'no'"}},
      {"type": "literal_error", "loc": ["body", "phase"], "msg": "Input should be 'vote', 'accept' or 'confirm'", "input": "p", "ctx": {"expected": "'vote', 'accept' or 'confirm'"}},
      {"type": "int_type", "loc": ["body", "created_at"], "msg": "Input should be a valid integer (Unix seconds)", "input": 1.5},
      {"type": "value_error", "loc": ["body", "sig"], "msg": "Value error, sig must be 64 bytes in canonical unpadded base64url (86 characters)", "input": "short"},
      {"type": "extra_forbidden", "loc": ["body", "extra"], "msg": "Extra inputs are not permitted", "input": true},
    ]],
    ["vote negative time", parseVote({ ...vote, created_at: -1 }), [
      {"type": "greater_than_equal", "loc": ["body", "created_at"], "msg": "Input should be greater than or equal to 0", "input": -1, "ctx": {"ge": 0}},
    ]],
    ["vote both slices", parseVote({ ...vote, slice_hash: 'b'.repeat(64) }), [
      {"type": "value_error", "loc": ["body", "slice_hash"], "msg": "Value error, give either slice or slice_hash, not both", "input": null},
    ]],
    ["vote no slice", parseVote(voteWithoutSlice), [
      {"type": "missing", "loc": ["body", "slice"], "msg": "Field required (slice or slice_hash)", "input": null},
    ]],
    ["vote bad slice hash", parseVote({ ...voteWithoutSlice, slice_hash: 'xyz' }), [
      {"type": "string_pattern_mismatch", "loc": ["body", "slice_hash"], "msg": "String should match pattern '^[0-9a-f]{64}$' (quorumSetHash of the slice)", "input": "xyz", "ctx": {"pattern": "^[0-9a-f]{64}$"}},
    ]],
    ["vote hint deep", parseVote({ ...vote, hint: nestedLists(40) }), [
      {"type": "value_error", "loc": ["body", "hint"], "msg": "Value error, hint nests at most 32 deep", "input": null, "ctx": {"max_depth": 32}},
    ]],
    ["vote hint big", parseVote({ ...vote, hint: 'x'.repeat(5000) }), [
      {"type": "value_error", "loc": ["body", "hint"], "msg": "Value error, hint is at most 4096 bytes of JSON", "input": null, "ctx": {"max_bytes": 4096}},
    ]],
    ["vote slice self", parseVote({ ...vote, slice: { t: 1, v: [key.nodeId], i: [] } }), [
      {"type": "value_error", "loc": ["body", "slice", "v", "0"], "msg": "Value error, a node does not list itself in its slice: self is implicit", "input": "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c"},
    ]],
    ["qs fields", validateQuorumSet({ t: 'x', v: 'y', i: 'z', w: 1 }), [
      {"type": "extra_forbidden", "loc": ["body", "w"], "msg": "Extra inputs are not permitted", "input": 1},
      {"type": "int_type", "loc": ["body", "t"], "msg": "Input should be a valid integer", "input": "x"},
      {"type": "list_type", "loc": ["body", "v"], "msg": "Input should be a valid list", "input": "y"},
      {"type": "list_type", "loc": ["body", "i"], "msg": "Input should be a valid list", "input": "z"},
    ]],
    ["qs t float", validateQuorumSet({ t: 1.5, v: [other.nodeId] }), [
      {"type": "int_type", "loc": ["body", "t"], "msg": "Input should be a valid integer", "input": 1.5},
    ]],
    ["qs bad node and twice", validateQuorumSet({ t: 1, v: ['AB', other.nodeId], i: [{ t: 1, v: [other.nodeId, 7] }, 'q'] }), [
      {"type": "string_pattern_mismatch", "loc": ["body", "v", "0"], "msg": "String should match pattern '^[0-9a-f]{64}$'", "input": "AB", "ctx": {"pattern": "^[0-9a-f]{64}$"}},
      {"type": "value_error", "loc": ["body", "i", "0", "v", "0"], "msg": "Value error, node listed twice (first at v.1)", "input": "fd1724385aa0c75b64fb78cd602fa1d991fdebf76b13c58ed702eac835e9f618"},
      {"type": "string_pattern_mismatch", "loc": ["body", "i", "0", "v", "1"], "msg": "String should match pattern '^[0-9a-f]{64}$'", "input": 7, "ctx": {"pattern": "^[0-9a-f]{64}$"}},
      {"type": "model_attributes_type", "loc": ["body", "i", "1"], "msg": "Input should be a valid dictionary or object to extract fields from", "input": "q"},
    ]],
    ["qs range", validateQuorumSet({ t: 3, v: [other.nodeId], i: [{ t: 0, v: [third.nodeId] }] }), [
      {"type": "value_error", "loc": ["body", "i", "0", "t"], "msg": "Value error, t must be between 1 and the number of entries (1)", "input": 0, "ctx": {"entries": 1}},
    ]],
    ["qs too many", validateQuorumSet({ t: 1, v: Array.from({ length: 1001 }, (_, k) => k.toString(16).padStart(64, '0')) }), [
      {"type": "value_error", "loc": ["body"], "msg": "Value error, a quorum set names 1 to 1000 nodes, this one names 1001", "input": null, "ctx": {"min_nodes": 1, "max_nodes": 1000, "nodes": 1001}},
    ]],
    ["qs deep", validateQuorumSet(nestedSets(6)), [
      {"type": "value_error", "loc": ["body", "i", "0", "i", "0", "i", "0", "i"], "msg": "Value error, quorum sets nest at most 4 deep", "input": null, "ctx": {"max_depth": 4}},
    ]],
    ["auth claim title", parseItemAuthorship({ ...claimDoc, title: 't', media_type: 'm' }), [
      {"type": "extra_forbidden", "loc": ["body", "title"], "msg": "Extra inputs are not permitted (a claim id already covers its title)", "input": "t"},
      {"type": "extra_forbidden", "loc": ["body", "media_type"], "msg": "Extra inputs are not permitted (a claim id already covers its title)", "input": "m"},
    ]],
    ["auth file fields", parseItemAuthorship({ ...fileDoc, title: 5, media_type: 'm'.repeat(201) }), [
      {"type": "string_type", "loc": ["body", "title"], "msg": "Input should be a valid string", "input": 5},
      {"type": "string_too_long", "loc": ["body", "media_type"], "msg": "String should have at most 200 characters", "input": "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm", "ctx": {"max_length": 200}},
    ]],
    ["decl fields", parseSliceDeclaration({ ...declaration, schema: 'x', node_id: 'y', slice_hash: 'd'.repeat(64), updated_ms: -1, sig: 1, z: 2 }), [
      {"type": "literal_error", "loc": ["body", "schema"], "msg": "Input should be 'x.slice/1'", "input": "x", "ctx": {"expected": "'x.slice/1'"}},
      {"type": "string_pattern_mismatch", "loc": ["body", "node_id"], "msg": "String should match pattern '^[0-9a-f]{64}$' (a node_id)", "input": "y", "ctx": {"pattern": "^[0-9a-f]{64}$"}},
      {"type": "value_error", "loc": ["body", "slice_hash"], "msg": "Value error, slice_hash is not the hash of slice (5e5c7c132b90a0ce5e8f3af11198b9788b241e635504173c72a23df3b9033d4e)", "input": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"},
      {"type": "int_type", "loc": ["body", "updated_ms"], "msg": "Input should be a non-negative integer (Unix milliseconds)", "input": -1},
      {"type": "value_error", "loc": ["body", "sig"], "msg": "Value error, sig must be 64 bytes in canonical unpadded base64url (86 characters)", "input": 1},
      {"type": "extra_forbidden", "loc": ["body", "z"], "msg": "Extra inputs are not permitted", "input": 2},
    ]],
    ["mismatch item", mismatch(fileDoc, { ...file, id: 'c'.repeat(64) }), [
      {"type": "value_error", "loc": ["body", "authorship", "item"], "msg": "Value error, item must be the id of the item it is posted with", "input": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
    ]],
    ["mismatch type", mismatch(claimDoc, { ...file, type: 'file' }), [
      {"type": "value_error", "loc": ["body", "authorship", "type"], "msg": "Value error, type must be file", "input": "claim"},
    ]],
    ["mismatch author", mismatch(fileDoc, { ...file, author: other.nodeId }), [
      {"type": "value_error", "loc": ["body", "authorship", "author"], "msg": "Value error, author must be the node posting the item", "input": "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c"},
    ]],
    ["mismatch title", mismatch(fileDoc, { ...file, title: 'a "quoted" name' }), [
      {"type": "value_error", "loc": ["body", "authorship", "title"], "msg": "Value error, title must be the file's title as stored: \"a \\\"quoted\\\" name\"", "input": "fw.bin"},
    ]],
    ["mismatch media", mismatch(fileDoc, { ...file, media_type: null }), [
      {"type": "value_error", "loc": ["body", "authorship", "media_type"], "msg": "Value error, media_type must be the file's media type as stored: null", "input": "application/octet-stream"},
    ]],
    // The relay service's own rules (server/relay), as its hand-built 422s answered them before
    // they came through the translator (decision 0670).
    ["phone", at(['body', 'phone'], { path: [], code: 'not_phone_number', input: '0791234567' }), [
      {"type": "value_error", "loc": ["body", "phone"], "msg": "Value error, phone must be an E.164 number such as +41791234567", "input": "0791234567"},
    ]],
    ["peer url", at(['body', 'url'], { path: [], code: 'not_absolute_url', input: 'x' }, { path: [], code: 'not_http_url', input: 'ftp://a' }, { path: [], code: 'url_with_extras', input: 'http://a/?q' }, { path: [], code: 'own_url', input: 'http://me' }), [
      {"type": "url_parsing", "loc": ["body", "url"], "msg": "Value error, not an absolute URL", "input": "x"},
      {"type": "url_scheme", "loc": ["body", "url"], "msg": "Value error, a peer URL must be http or https", "input": "ftp://a"},
      {"type": "value_error", "loc": ["body", "url"], "msg": "Value error, a peer URL has no query, fragment or credentials", "input": "http://a/?q"},
      {"type": "value_error", "loc": ["body", "url"], "msg": "Value error, that is this relay", "input": "http://me"},
    ]],
    ["multipart", at(['header', 'content-type'], { path: [], code: 'not_multipart', note: 'Unsupported content type: text/plain', input: 'text/plain' }), [
      {"type": "value_error", "loc": ["header", "content-type"], "msg": "Value error, not a usable multipart request: Unsupported content type: text/plain", "input": "text/plain"},
    ]],
    ["form", at(['body'], { path: ['title'], code: 'form_field_too_big', limit: 4096 }, { path: ['file'], code: 'file_parts' }, { path: [], code: 'form_parts', limit: 4 }, { path: ['file'], code: 'missing' }), [
      {"type": "value_error", "loc": ["body", "title"], "msg": "Value error, a form field holds at most 4096 bytes", "input": null},
      {"type": "value_error", "loc": ["body", "file"], "msg": "Value error, send one file part", "input": null},
      {"type": "value_error", "loc": ["body"], "msg": "Value error, a form holds one file part and at most 4 fields", "input": null},
      {"type": "missing", "loc": ["body", "file"], "msg": "Field required", "input": null},
    ]],
    ["signatures", at(['body'], { path: ['authorship', 'sig'], code: 'not_author_signature', input: 's' }, { path: ['sig'], code: 'not_declarer_signature', input: 't' }), [
      {"type": "value_error", "loc": ["body", "authorship", "sig"], "msg": "Value error, sig is not the author's Ed25519 signature over this statement", "input": "s"},
      {"type": "value_error", "loc": ["body", "sig"], "msg": "Value error, sig is not the node's Ed25519 signature over this declaration", "input": "t"},
    ]],
    ["stored", at(['body'], { path: ['slice_hash'], code: 'unknown_slice_hash', input: 'ab' }, { path: ['kind'], code: 'nul_character', input: 'a\u0000' }), [
      {"type": "value_error", "loc": ["body", "slice_hash"], "msg": "Value error, unknown slice_hash: publish the slice with POST /slice first, or send slice instead", "input": "ab"},
      {"type": "value_error", "loc": ["body", "kind"], "msg": "Value error, must not contain U+0000 (NUL)", "input": "a\u0000"},
    ]],
    // The relay's own rules on ids, proofs, statements and queries (decision 0780), each as a use case
    // or route raises it; the answers are those the handlers built by hand before (recorded in
    // test/integration/relay-refusal-answers.expected.ts from the old handlers).
    ["id not an item id", at(['path', 'item_id'], {path: [],code: "not_item_id",input: "XYZ"}), [{"type":"value_error","loc":["path","item_id"],"msg":"Value error, item id must be 64 lowercase hex characters (a SHA-256 digest)","input":"XYZ"}]],
    ["path id not a node id", at(['path'], {path: ["id"],code: "not_node_id",input: "nope"}), [{"type":"value_error","loc":["path","id"],"msg":"Value error, node id must be 64 lowercase hex characters","input":"nope"}]],
    ["query author not a node id", at(['query', 'authors', 1], {path: [],code: "not_author_id",input: "nope"}), [{"type":"value_error","loc":["query","authors",1],"msg":"Value error, each author must be a node id (64 lowercase hex characters)","input":"nope"}]],
    ["proof node id unacceptable", at(['body'], {path: ["node_id"],code: "unacceptable_node_id",note: "not a point on the curve",input: "abc"}), [{"type":"value_error","loc":["body","node_id"],"msg":"Value error, not a point on the curve","input":"abc"}]],
    ["proof for another relay", at(['body'], {path: ["relay"],code: "not_this_relay",expected: "http://relay.test",input: "http://other.test"}), [{"type":"value_error","loc":["body","relay"],"msg":"Value error, relay must be this relay's base URL http://relay.test","input":"http://other.test","ctx":{"expected":"http://relay.test"}}]],
    ["proof time skew", at(['body'], {path: ["created_at"],code: "created_at_skew",count: 900,limit: 300,nowSeconds: 1700000900,input: 1700000000}), [{"type":"value_error","loc":["body","created_at"],"msg":"Value error, created_at is 900 s away from the relay clock (at most 300 s)","input":1700000000,"ctx":{"now":1700000900}}]],
    ["statement time ahead", at(['body'], {path: ["created_at"],code: "created_at_ahead",note: "more than 300 s ahead of this relay",input: 1700009999,nowSeconds: 1700000000}), [{"type":"value_error","loc":["body","created_at"],"msg":"Value error, more than 300 s ahead of this relay","input":1700009999,"ctx":{"now":1700000000}}]],
    ["declaration time ahead", at(['body'], {path: ["updated_ms"],code: "updated_ms_ahead",limit: 300,nowMs: 1700000000000,input: 1800000000000}), [{"type":"value_error","loc":["body","updated_ms"],"msg":"Value error, updated_ms is more than 300 s ahead of this relay's clock","input":1800000000000,"ctx":{"now_ms":1700000000000}}]],
    ["proof signature", at(['body'], {path: ["sig"],code: "not_node_signature",input: "c2ln"}), [{"type":"value_error","loc":["body","sig"],"msg":"Value error, sig is not a signature of this document by node_id (Ed25519 over RFC 8785 bytes without sig)","input":"c2ln"}]],
    ["vote signature", at(['body'], {path: ["sig"],code: "not_voter_signature",input: "c2ln"}), [{"type":"value_error","loc":["body","sig"],"msg":"Value error, sig is not the voter's Ed25519 signature over this vote","input":"c2ln"}]],
    ["vote for another item", at(['body'], {path: ["item"],code: "not_path_item",input: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}), [{"type":"value_error","loc":["body","item"],"msg":"Value error, item must equal the id in the path","input":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}]],
    ["file media type long", at(['body', 'file'], {path: [],code: "media_type_too_long",limit: 255,input: "x/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}), [{"type":"value_error","loc":["body","file"],"msg":"Value error, the file part's Content-Type is at most 255 characters","input":"x/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy","ctx":{"max_length":255}}]],
    ["authorship not json", at(['body', 'authorship'], {path: [],code: "authorship_not_json",input: "{nope"}), [{"type":"json_invalid","loc":["body","authorship"],"msg":"Value error, authorship must be the x.item/1 statement as JSON text","input":"{nope"}]],
    ["slice member absent", at(['body', 'node_id'], {path: [],code: "not_slice_member",input: "nnnnnnnnnn"}), [{"type":"value_error","loc":["body","node_id"],"msg":"Value error, this node is not a top-level validator of your slice","input":"nnnnnnnnnn"}]],
    ["events limit above maximum", at(['query'], {path: ["limit"],code: "above_maximum",limit: 500,input: "501"}), [{"type":"less_than_equal","loc":["query","limit"],"msg":"Input should be less than or equal to 500","input":"501","ctx":{"le":500}}]],
    ["too many authors", at(['query'], {path: ["authors"],code: "too_many_items",limit: 50,input: "a,b"}), [{"type":"too_long","loc":["query","authors"],"msg":"List should have at most 50 items","input":"a,b","ctx":{"max_length":50}}]],
    ["pairing token", at(['path', 'token'], {path: [],code: "not_pairing_token",input: "short"}), [{"type":"value_error","loc":["path","token"],"msg":"Value error, not a pairing token","input":"short"}]],
];

describe("the core's problems as the relay answers them", () => {
  it.each(CASES)('%s', (_name, result, expected) => {
    const { where, problems } = problemsOf(result);
    // Compared as JSON text: the key order is part of the answer's bytes.
    expect(JSON.stringify(coreProblemsToValidation(problems, where), null, 1)).toBe(JSON.stringify(expected, null, 1));
  });

  it('a value with no canonical form answers with the reason alone, where it is', () => {
    let problems: Problem[] = [];
    try {
      canonicalJson({ a: [Number.NaN] });
    } catch (error) {
      problems = (error as RelayError).problems;
    }
    expect(JSON.stringify(coreProblemsToValidation(problems, ['body']))).toBe('[{"type":"value_error","loc":["body","a","0"],"msg":"number NaN has no JSON form","input":null}]');
  });

  it('every code of the core is answered by a case above', () => {
    const answered = new Set(CASES.flatMap(([, result]) => problemsOf(result).problems.map((p) => p.code)));
    answered.add('no_canonical_form');
    expect(problemCodes.filter((code) => !answered.has(code))).toEqual([]);
  });
});
