import type { Response, Router } from 'express';
import { strictRouter } from '../../http/starlette-routing.js';
import { setPageSecurityHeaders, styleHashSource } from '../../http/security-headers.js';
import { claimKinds } from '../../../core/relay/claim.js';
import { claimSchema, credentialFormats, credentialMeaning, type CredentialKind, publicLimits, relayProtocol, relayScheme, relayVersion, voteSchema } from '../../../wire/relay/relay-facts.js';
import type { RelayRoute } from './relay-route.js';

/** The endpoint table (Markdown), one row per route, in the spec's order of appearance in our route list. */
export function endpointsMarkdown(routes: readonly RelayRoute[]): string {
  const rows = routes.map((r) => `| ${r.method.toUpperCase()} | ${r.path} | ${r.auth} | ${r.since} | ${r.summary.replace(/\|/g, '\\|')} |`);
  return ['| Method | Path | Credential | Since | What it does |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** Which credential each endpoint takes, grouped by kind (Markdown). */
export function credentialsMarkdown(routes: readonly RelayRoute[]): string {
  const kinds: CredentialKind[] = ['none', 'signature', 'human', 'bot', 'human-or-bot'];
  const rows = kinds.map((k) => {
    const list = routes.filter((r) => r.auth === k).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    return `| ${k} | ${credentialMeaning[k]} | ${list.join(', ')} |`;
  });
  return ['| Credential | Meaning | Endpoints |', '|---|---|---|', ...rows].join('\n');
}

export function limitsMarkdown(): string {
  const rows = Object.entries(publicLimits()).map(([k, v]) => `| ${k} | ${v} |`);
  return ['| Limit | Value |', '|---|---|', ...rows].join('\n');
}

/** /AGENTS.md: how an agent uses this relay, from the same facts as the API. */
export function agentsMarkdown(routes: readonly RelayRoute[], baseUrl: string): string {
  return `# x-relay ${relayVersion}: guide for agents

Base address: ${baseUrl}. Protocol ${relayProtocol}, voting scheme ${relayScheme}, schemas ${claimSchema} and ${voteSchema}.
Machine-readable: ${baseUrl}/openapi.json. Health and limits: ${baseUrl}/health.

## Credentials
- Humans: \`${credentialFormats.human}\`. Get it from POST /register (a signed x.register/1 document), POST /session, POST /login/verify or POST /recover/finish.
- Bots: \`${credentialFormats.bot}\`. A human creates one with POST /bots; the token is shown once and stored hashed; a bot acts for that human's node.
- Votes need no header: the Ed25519 signature inside the vote authenticates it.

${credentialsMarkdown(routes)}

## Signing
Registration, session and vote documents are signed with the node's Ed25519 key over the RFC 8785
(JCS) canonical JSON of the document without \`sig\` (and, for votes, without \`hint\`). \`sig\` is
unpadded base64url. A node id is the 64-hex-character public key. GET /examples shows signed documents that verify.

## Items
- Claim: POST /items with JSON \`{kind, title, body}\`; kind one of ${claimKinds.join(', ')}; id = sha256("x.claim/1\\n" + kind + "\\n" + title + "\\n" + body).
  Lengths count Unicode code points; kind and title may not contain a line break (422).
- File: POST /items as multipart/form-data with a \`file\` part; id = sha256 of the bytes; larger than the limit: 413.

## Errors
\`{"detail": "message"}\`; validation: 422 \`{"detail": [{"type", "loc", "msg", "input", "ctx"}]}\`; 401 missing or bad credential; 403 wrong kind of credential; 429 rate limit with Retry-After.

## Limits
${limitsMarkdown()}

## Endpoints
${endpointsMarkdown(routes)}
`;
}

/** /llms.txt (llmstxt.org layout): title, summary, then links. */
export function llmsTxt(routes: readonly RelayRoute[], baseUrl: string, humanUrl: string): string {
  return `# x-relay ${relayVersion}

> A relay node of the ${relayProtocol} protocol: nodes post claims and files, sign votes (${voteSchema}, Ed25519 over RFC 8785 bytes) and the relay tallies them with ${relayScheme} federated voting. Humans use \`${credentialFormats.human}\`, bots \`${credentialFormats.bot}\`.

## Docs
- [Agent guide](${humanUrl}/AGENTS.md): credentials, signing, items, errors, limits, every endpoint
- [OpenAPI](${baseUrl}/openapi.json): request schemas generated from the validators
- [Health](${baseUrl}/health): version, limits, page addresses
- [Examples](${baseUrl}/examples): signed documents that verify

## Endpoints
${routes.map((r) => `- ${r.method.toUpperCase()} ${baseUrl}${r.path} (${r.auth}): ${r.summary}`).join('\n')}
`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The one style sheet of the site; the CSP allows it by its hash (it never changes, so no nonce is needed). */
const SITE_STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}code{background:#f3f3f3;padding:0 .2rem}';
const SITE_STYLE_SOURCE = styleHashSource(SITE_STYLE);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${SITE_STYLE}</style>
</head><body>${body}</body></html>`;
}

/** Sends a site document with the headers of the bench pages (CSP, no framing, no referrer, nosniff). */
function sendSite(res: Response, type: string, body: string): void {
  setPageSecurityHeaders(res, { styleSources: [SITE_STYLE_SOURCE] });
  res.type(type).send(body);
}

function htmlTable(headers: string[], rows: string[][]): string {
  return `<table><thead><tr>${headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/** The pages `relaySite` serves (GET), under the path of `humanUrl`. */
export const RELAY_SITE_PATHS = ['/', '/agents', '/AGENTS.md', '/llms.txt'] as const;

/** The human site: `/`, `/agents`, `/AGENTS.md`, `/llms.txt`, mounted at the path of `humanUrl`. */
export function relaySite(routes: readonly RelayRoute[], baseUrl: string, humanUrl: string, stats: () => Promise<Record<string, number>>): Router {
  const router = strictRouter();
  const limitsRows = Object.entries(publicLimits()).map(([k, v]) => [k, String(v)]);
  router.get('/', async (_req, res) => {
    const s = await stats();
    sendSite(
      res,
      'html',
      page(
        `x-relay ${relayVersion}`,
        `<h1>x-relay relay</h1>
<p>This is a relay node of <strong>${relayProtocol}</strong> ${escapeHtml(relayVersion)}: people and their bots post claims and files, sign yes/no votes with their own keys, and the relay tallies them with <strong>${relayScheme}</strong> federated voting (every node chooses whom it trusts: its slice).</p>
<p>It knows ${s.nodes} nodes, ${s.items} items and ${s.votes} votes, and federates with ${s.peers} peer relays.</p>
<h2>Getting started</h2>
<ol><li>Make an Ed25519 key; your node id is its public key in hex.</li><li>Register by posting a signed registration document to <code>${escapeHtml(baseUrl)}/register</code> (see <a href="${escapeHtml(baseUrl)}/examples">examples</a>).</li><li>Optionally add a phone number to log in and recover your account by SMS.</li><li>Choose your slice, post claims, vote.</li></ol>
<h2>Credentials</h2>
${htmlTable(['Who', 'Header'], [['Human', credentialFormats.human], ['Bot', credentialFormats.bot]])}
<h2>Limits</h2>
${htmlTable(['Limit', 'Value'], limitsRows)}
<p>Agents: see <a href="${escapeHtml(humanUrl)}/agents">the agent page</a>, <a href="${escapeHtml(humanUrl)}/AGENTS.md">AGENTS.md</a> and <a href="${escapeHtml(humanUrl)}/llms.txt">llms.txt</a>. API description: <a href="${escapeHtml(baseUrl)}/openapi.json">openapi.json</a>.</p>`,
      ),
    );
  });
  router.get('/agents', (_req, res) => {
    sendSite(
      res,
      'html',
      page(
        `x-relay ${relayVersion} for agents`,
        `<h1>x-relay for agents</h1>
<p>Base address <code>${escapeHtml(baseUrl)}</code>. A bot token comes from a human (<code>POST /bots</code>) and is sent as <code>${escapeHtml(credentialFormats.bot)}</code>. Votes are authenticated by their Ed25519 signature over RFC 8785 canonical JSON (without <code>sig</code> and <code>hint</code>).</p>
<p>Read <a href="${escapeHtml(humanUrl)}/AGENTS.md">AGENTS.md</a> or <a href="${escapeHtml(baseUrl)}/openapi.json">openapi.json</a>.</p>
<h2>Which credential where</h2>
${htmlTable(
  ['Method', 'Path', 'Credential', 'Since'],
  routes.map((r) => [r.method.toUpperCase(), r.path, r.auth, r.since]),
)}
<h2>Limits</h2>
${htmlTable(['Limit', 'Value'], limitsRows)}`,
      ),
    );
  });
  router.get('/AGENTS.md', (_req, res) => {
    sendSite(res, 'text/markdown; charset=utf-8', agentsMarkdown(routes, baseUrl));
  });
  router.get('/llms.txt', (_req, res) => {
    sendSite(res, 'text/plain; charset=utf-8', llmsTxt(routes, baseUrl, humanUrl));
  });
  return router;
}
