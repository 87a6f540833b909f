import { randomBytes } from 'node:crypto';
import express from 'express';
import type { Clock } from '../../../core/clock.js';
import type { BenchSnapshot } from '../views/bench-snapshot.js';
import { CSRF_TOKEN_TTL_MS, type CsrfRejection, issueCsrfToken, verifyCsrfToken } from './csrf-token.js';
import { aiPluginManifest, renderLlmsTxt, renderRobotsTxt } from './discovery-documents.js';
import { renderHomePage } from './home-page.js';
import { activityTable, boardsTable } from './snapshot-views.js';
import { sendHtmlPage, setCommonHeaders } from './html-response.js';
import { renderLogoPng } from './logo-png.js';
import type { WaitlistStore } from '../../storage/bench/waitlist-store.js';
import { renderStatsPage } from './stats-page.js';
import { type ValidationErrorItem, parseWaitlistForm } from './waitlist-form.js';
import { strictRouter } from '../../http/starlette-routing.js';
import { formCharsetOf } from '../../../wire/form-fields.js';
import { latin1FormPairs } from './latin1-form.js';

/**
 * The parts of the bench service (spec 0.3.4) that people and crawlers see: `GET /`, `GET /stats`,
 * `GET /llms.txt`, `GET /robots.txt`, `GET /.well-known/ai-plugin.json`, `POST /api/v1/waitlist`,
 * plus `GET /logo.png` for the manifest. docs/pages.md explains every choice made here.
 *
 * The router answers only its own paths and handles only its own errors (route-level error
 * handlers), so it can be mounted next to the JSON API without touching that API's responses.
 */
export interface PagesDeps {
  clock: Clock;
  /** e.g. http://127.0.0.1:8080, used in curl examples, llms.txt and ai-plugin.json. */
  publicBaseUrl: string;
  /** The service serves MCP at `/mcp`: llms.txt and the home page say how to connect. */
  mcp?: boolean;
  snapshot: () => Promise<BenchSnapshot>;
  waitlist: WaitlistStore;
  /** Server-wide secret (32 random bytes, persisted by the API side); signs the waitlist CSRF tokens. */
  csrfSecret: Uint8Array;
  /** Operator address for ai-plugin.json `contact_email`; none set: the manifest leaves it out. */
  contactEmail?: string;
  /**
   * The example firmware the service ships for a board (its `hello.elf`), served at
   * `/examples/{board}/hello.elf` so a first run needs no local file (issue 31); undefined: none.
   */
  exampleFirmware?: (board: string) => Uint8Array | undefined;
  /** The waitlist form and its mention on the pages; false: turned off by the operator (`--no-waitlist`). */
  waitlistOpen?: boolean;
  /** Where unexpected errors are reported with their cause; defaults to `console.error`. */
  logError?: (message: string, cause: unknown) => void;
}

/** Largest waitlist form body accepted; the largest valid form (a note of 500 four-byte characters, percent-encoded) is about 7 KiB. */
export const WAITLIST_BODY_LIMIT_BYTES = 16 * 1024;

/** Every route this router serves, for the API's 405 handling and route-vs-document checks. */
export const PAGES_ROUTES = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/stats' },
  { method: 'GET', path: '/live/home' },
  { method: 'GET', path: '/llms.txt' },
  { method: 'GET', path: '/robots.txt' },
  { method: 'GET', path: '/.well-known/ai-plugin.json' },
  { method: 'GET', path: '/logo.png' },
  { method: 'GET', path: '/examples/:board/hello.elf' },
  { method: 'POST', path: '/api/v1/waitlist' },
] as const;

/** A response this router decided on; sent as `{"detail": ...}` by the route's own error handler. */
class PagesHttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | ValidationErrorItem[],
  ) {
    super(typeof detail === 'string' ? detail : 'validation failed');
  }
}

/** The public base URL without a trailing slash; refuses anything that is not an absolute http(s) URL. */
export function normalisePublicBaseUrl(publicBaseUrl: string): string {
  let url: URL;
  try {
    url = new URL(publicBaseUrl);
  } catch {
    throw new RangeError(`publicBaseUrl must be an absolute http(s) URL, got ${JSON.stringify(publicBaseUrl)}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username || url.password) {
    throw new RangeError(
      `publicBaseUrl must be an http(s) URL without query, fragment or credentials, got ${JSON.stringify(publicBaseUrl)}`,
    );
  }
  return url.href.replace(/\/+$/, '');
}

function sendText(res: express.Response, text: string): void {
  setCommonHeaders(res);
  res.set('Cache-Control', 'public, max-age=300');
  res.type('text/plain; charset=utf-8').send(text);
}

const CSRF_ADVICE: Record<CsrfRejection, string> = {
  missing: 'The waitlist form was sent without its CSRF token',
  malformed: 'The CSRF token of the waitlist form is not a token this server issues',
  forged: 'The CSRF token of the waitlist form is not valid (not signed by this server)',
  expired: `The CSRF token of the waitlist form has expired (tokens are valid for ${CSRF_TOKEN_TTL_MS / 60_000} minutes)`,
  'not-yet-valid': 'The CSRF token of the waitlist form is dated in the future',
};

/** Submitted form fields, each name with every value given, in order. Empty when there is no body. */
function formFields(req: express.Request): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  const body: unknown = req.body;
  if (!Buffer.isBuffer(body) || body.length === 0) return fields;
  if (!req.is('application/x-www-form-urlencoded')) {
    throw new PagesHttpError(
      415,
      `The waitlist takes an application/x-www-form-urlencoded form (fields kind, email, note, csrf), got ${JSON.stringify(req.get('content-type') ?? 'no content type')}.`,
    );
  }
  // US-ASCII is read as UTF-8, ISO-8859-1 as Latin-1 (its percent escapes single bytes), as the
  // API's forms read them; browsers send the page's form in the page's UTF-8.
  const charset = formCharsetOf(req.get('content-type'));
  if ('refused' in charset) throw new PagesHttpError(415, `The waitlist form must be UTF-8, US-ASCII or ISO-8859-1, got charset ${JSON.stringify(charset.refused)}.`);
  let pairs: Iterable<[string, string]>;
  if (charset.read === 'latin1') pairs = latin1FormPairs(body);
  else {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    } catch {
      throw new PagesHttpError(400, 'There was an error parsing the body: the form is not valid UTF-8.');
    }
    pairs = new URLSearchParams(text);
  }
  for (const [name, value] of pairs) {
    const values = fields.get(name);
    if (values) values.push(value);
    else fields.set(name, [value]);
  }
  return fields;
}

/**
 * Browsers say where a form post came from. A post from another site is refused even with a valid
 * token, because the token is not tied to the visitor (docs/pages.md, "CSRF"). Clients that send
 * neither header (curl, agents) are judged by the token alone.
 */
function crossSiteReason(req: express.Request, publicBaseUrl: string): string | undefined {
  const fetchSite = req.get('sec-fetch-site');
  if (fetchSite !== undefined) {
    return fetchSite === 'same-origin' || fetchSite === 'none' ? undefined : `Sec-Fetch-Site: ${fetchSite}`;
  }
  const origin = req.get('origin');
  if (origin === undefined) return undefined;
  const allowed = [new URL(publicBaseUrl).origin, `${req.protocol}://${req.get('host') ?? ''}`];
  return allowed.includes(origin) ? undefined : `Origin: ${origin}`;
}

/** Builds the router; mount it at the root of the bench service app. */
export function createPagesRouter(deps: PagesDeps): express.Router {
  const baseUrl = normalisePublicBaseUrl(deps.publicBaseUrl);
  const contactEmail = deps.contactEmail;
  const logError = deps.logError ?? ((message: string, cause: unknown) => console.error(message, cause));
  // Fail at start-up, not at the first form, when the secret is unusable.
  issueCsrfToken(deps.csrfSecret, deps.clock.nowMs());

  const llmsTxt = renderLlmsTxt(baseUrl, { mcp: deps.mcp === true, waitlist: deps.waitlistOpen !== false });
  const robotsTxt = renderRobotsTxt(baseUrl);
  const manifest = aiPluginManifest(baseUrl, contactEmail);
  const logoPng = renderLogoPng();

  /** Route-level error handler: answers this router's own errors in the service's wire format. */
  const sendError: express.ErrorRequestHandler = (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    setCommonHeaders(res);
    res.set('Cache-Control', 'no-store');
    if (err instanceof PagesHttpError) {
      res.status(err.status).json({ detail: err.detail });
      return;
    }
    // body-parser's errors carry a status and a type; translate the ones a client can cause.
    const status = (err as { status?: unknown }).status;
    const type = (err as { type?: unknown }).type;
    if (type === 'entity.too.large') {
      res.status(413).json({ detail: `The waitlist form body is larger than ${WAITLIST_BODY_LIMIT_BYTES} bytes.` });
      return;
    }
    if (type === 'encoding.unsupported') {
      res.status(415).json({ detail: 'The waitlist form body uses a content encoding this server does not support; send it uncompressed.' });
      return;
    }
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(400).json({ detail: 'There was an error parsing the body.' });
      return;
    }
    logError(`pages: ${req.method} ${req.originalUrl} failed`, err);
    res.status(500).json({ detail: 'Internal Server Error' });
  };

  const homePage: express.RequestHandler = async (req, res) => {
    const snapshot = await deps.snapshot();
    const nowMs = deps.clock.nowMs();
    const styleNonce = randomBytes(16).toString('base64');
    const page = renderHomePage({
      snapshot,
      nowMs,
      publicBaseUrl: baseUrl,
      csrfToken: issueCsrfToken(deps.csrfSecret, nowMs),
      styleNonce,
      joined: req.query['joined'] === '1',
      mcp: deps.mcp === true,
      waitlistOpen: deps.waitlistOpen !== false,
    });
    sendHtmlPage(res, styleNonce, page);
  };

  // The home page's live parts, rendered as the page renders them (its script swaps them in).
  const liveHome: express.RequestHandler = async (_req, res) => {
    const snapshot = await deps.snapshot();
    setCommonHeaders(res);
    res.set('Cache-Control', 'no-store');
    res.json({ 'live-boards': boardsTable(snapshot, deps.clock.nowMs()).value, 'live-activity': activityTable(snapshot.recentActivity).value });
  };

  const statsPage: express.RequestHandler = async (_req, res) => {
    const snapshot = await deps.snapshot();
    const styleNonce = randomBytes(16).toString('base64');
    sendHtmlPage(res, styleNonce, renderStatsPage({ snapshot, nowMs: deps.clock.nowMs(), styleNonce, waitlistOpen: deps.waitlistOpen !== false }));
  };

  const textDocument =
    (text: string): express.RequestHandler =>
    (_req, res) =>
      sendText(res, text);

  const manifestJson: express.RequestHandler = (_req, res) => {
    setCommonHeaders(res);
    res.set('Cache-Control', 'public, max-age=300');
    res.json(manifest);
  };

  const exampleElf: express.RequestHandler = (req, res) => {
    const board = String(req.params['board']);
    const bytes = deps.exampleFirmware?.(board);
    if (!bytes) throw new PagesHttpError(404, `no example firmware for board "${board}" here: GET /api/v1/boards lists the boards`);
    setCommonHeaders(res);
    res.set('Cache-Control', 'public, max-age=3600');
    res.type('application/octet-stream').attachment(`${board}-hello.elf`).send(Buffer.from(bytes));
  };

  const logo: express.RequestHandler = (_req, res) => {
    setCommonHeaders(res);
    res.set('Cache-Control', 'public, max-age=86400');
    res.type('image/png').send(logoPng);
  };

  // Any content type is read (bounded) so that a wrong one gets a clear 415 rather than "email is empty".
  const readBody = express.raw({ type: () => true, limit: WAITLIST_BODY_LIMIT_BYTES });

  const joinWaitlist: express.RequestHandler = async (req, res) => {
    if (deps.waitlistOpen === false) throw new PagesHttpError(403, 'the operator of this bench turned the waitlist off');
    const parsed = parseWaitlistForm(formFields(req));
    if (!parsed.ok) throw new PagesHttpError(422, parsed.errors);
    const { form } = parsed;

    const crossSite = crossSiteReason(req, baseUrl);
    if (crossSite !== undefined) {
      throw new PagesHttpError(
        403,
        `Cross-site waitlist submission refused (${crossSite}): open ${baseUrl}/ and submit the form from there.`,
      );
    }
    const nowMs = deps.clock.nowMs();
    const verdict = verifyCsrfToken(form.csrf, deps.csrfSecret, nowMs);
    if (!verdict.ok) {
      throw new PagesHttpError(
        403,
        `${CSRF_ADVICE[verdict.reason]}: reload ${baseUrl}/ and submit the waitlist form again (agents: take the hidden csrf field from that page's form).`,
      );
    }

    // Duplicate addresses succeed the same way as new ones, so the answer never reveals who is on the list.
    await deps.waitlist.add({ email: form.email, kind: form.kind, note: form.note, joinedAtMs: Math.floor(nowMs) });

    setCommonHeaders(res);
    res.set('Cache-Control', 'no-store');
    if (req.get('accept') !== undefined && req.accepts(['application/json', 'text/html']) === 'text/html') {
      res.redirect(303, `${req.baseUrl}/?joined=1#waitlist`);
      return;
    }
    res.json({ status: 'ok', kind: form.kind, email: form.email });
  };

  const router = strictRouter();
  router.get('/', homePage, sendError);
  router.get('/stats', statsPage, sendError);
  router.get('/live/home', liveHome, sendError);
  router.get('/llms.txt', textDocument(llmsTxt), sendError);
  router.get('/robots.txt', textDocument(robotsTxt), sendError);
  router.get('/.well-known/ai-plugin.json', manifestJson, sendError);
  router.get('/logo.png', logo, sendError);
  router.get('/examples/:board/hello.elf', exampleElf, sendError);
  router.post('/api/v1/waitlist', readBody, joinWaitlist, sendError);
  return router;
}
