import { randomBytes } from 'node:crypto';
import express from 'express';
import type { Clock } from '../../../core/clock.js';
import { HttpError } from '../../http/http-error.js';
import { refuseNulInPath } from '../../http/api-route.js';
import type { Bench } from '../domain/bench.js';
import { mapBenchErrors } from '../routes/bench-error-http.js';
import { answerUartEventStream } from '../routes/uart-event-stream.js';
import { jobBody } from '../views/bench-views.js';
import { adminBody, adminJob } from '../views/board-views.js';
import { renderConsoleBoard, renderConsoleIndex, renderConsoleJob, renderSignIn } from './console-pages.js';
import { CONSOLE_SESSION_MS, consoleCookieValue, consoleSetCookie, hasConsoleSession, isAdminToken } from './console-session.js';
import { issueCsrfToken, verifyCsrfToken } from './csrf-token.js';
import { sendHtmlPage } from './html-response.js';
import { strictRouter } from '../../http/starlette-routing.js';

export interface ConsoleDeps {
  clock: Clock;
  bench: Bench;
  adminToken: string | undefined;
  /** Signs console cookies and CSRF tokens (kept in the store: every replica accepts them). */
  secret: Uint8Array;
  /** Cookies get `Secure` when the public address is https. */
  secureCookies: boolean;
  /** The waitlist is open: the shared nav links to it (false: `--no-waitlist`). */
  waitlistOpen: boolean;
}

/** The console's paths, for the 405 rule and the OpenAPI document. */
export const CONSOLE_ROUTES = [
  { method: 'GET', path: '/console' },
  { method: 'GET', path: '/console/sign-in' },
  { method: 'POST', path: '/console/sign-in' },
  { method: 'POST', path: '/console/sign-out' },
  { method: 'GET', path: '/console/jobs/:job_id' },
  { method: 'GET', path: '/console/jobs/:job_id/uart' },
  { method: 'GET', path: '/console/boards/:board' },
  { method: 'POST', path: '/console/boards/:board/release' },
] as const;

/**
 * The operator's console: signing in with the admin token, every job with its UART (live while
 * it runs), a board's history and pass rate, quarantined boards with a release button. Forms
 * carry CSRF tokens and the cookie is SameSite=Strict; a page asked for without a session
 * redirects to the sign-in, a stream or a form answers 401.
 */
export function createConsoleRouter(deps: ConsoleDeps): express.Router {
  const router = strictRouter();
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });
  const now = () => deps.clock.nowMs();
  const csrf = () => issueCsrfToken(deps.secret, now());
  const nonce = () => randomBytes(16).toString('base64');
  const signedIn = (req: express.Request) => hasConsoleSession(req.headers.cookie, deps.secret, now());
  const checkForm = (req: express.Request) => {
    const token = typeof (req.body as Record<string, unknown> | undefined)?.csrf === 'string' ? ((req.body as Record<string, string>).csrf as string) : '';
    if (!verifyCsrfToken(token, deps.secret, now()).ok) throw new HttpError(403, 'the form expired or did not come from this console: reload it and try again');
  };
  /** Pages send a browser to the sign-in; streams and forms refuse. */
  const page = (render: (req: express.Request, res: express.Response) => Promise<string | undefined>): express.RequestHandler => async (req, res) => {
    if (!signedIn(req)) return res.redirect(303, '/console/sign-in');
    const styleNonce = nonce();
    res.locals.styleNonce = styleNonce;
    const html = await render(req, res);
    if (html !== undefined) sendHtmlPage(res, styleNonce, html);
  };
  const requireSession = (req: express.Request) => {
    if (!signedIn(req)) throw new HttpError(401, 'sign in to the console first: /console/sign-in');
  };
  const param = (req: express.Request, name: string) => {
    refuseNulInPath(req.params as Record<string, string>);
    return String((req.params as Record<string, string>)[name]);
  };

  router.get('/console/sign-in', (_req, res) => {
    const styleNonce = nonce();
    sendHtmlPage(res, styleNonce, renderSignIn({ styleNonce, waitlistOpen: deps.waitlistOpen, csrf: csrf(), closed: !deps.adminToken }));
  });
  router.post('/console/sign-in', form, (req, res) => {
    checkForm(req);
    const token = String((req.body as Record<string, unknown>).token ?? '');
    if (!isAdminToken(token, deps.adminToken)) {
      const styleNonce = nonce();
      res.status(401);
      return sendHtmlPage(res, styleNonce, renderSignIn({ styleNonce, waitlistOpen: deps.waitlistOpen, csrf: csrf(), closed: !deps.adminToken, problem: 'That is not the administrator token of this server.' }));
    }
    res.set('Set-Cookie', consoleSetCookie(consoleCookieValue(deps.secret, now()), { secure: deps.secureCookies, maxAgeSeconds: CONSOLE_SESSION_MS / 1000 }));
    res.redirect(303, '/console');
  });
  router.post('/console/sign-out', form, (req, res) => {
    checkForm(req);
    res.set('Set-Cookie', consoleSetCookie('', { secure: deps.secureCookies, maxAgeSeconds: 0 }));
    res.redirect(303, '/console/sign-in');
  });
  router.get('/console', page(async (_req, res) => renderConsoleIndex({ styleNonce: res.locals.styleNonce as string, waitlistOpen: deps.waitlistOpen, csrf: csrf(), admin: adminBody(await deps.bench.admin()) })));
  router.get(
    '/console/jobs/:job_id',
    page(async (req, res) => {
      const found = await deps.bench.operatorJob(param(req, 'job_id'));
      if (!found) throw new HttpError(404, `job ${param(req, 'job_id')} not found`);
      return renderConsoleJob({ styleNonce: res.locals.styleNonce as string, waitlistOpen: deps.waitlistOpen, job: jobBody(found.job), agentLabel: found.agentLabel });
    }),
  );
  router.get('/console/jobs/:job_id/uart', async (req, res) => {
    requireSession(req);
    await answerUartEventStream(req, res, mapBenchErrors((options) => deps.bench.streamJobUartAsOperator(param(req, 'job_id'), options)));
  });
  router.get('/console/boards/:board', page(async (req, res) => renderConsoleBoard({ styleNonce: res.locals.styleNonce as string, waitlistOpen: deps.waitlistOpen, boardId: param(req, 'board'), history: (await deps.bench.boardHistory(param(req, 'board'))).map(adminJob) })));
  router.post('/console/boards/:board/release', form, async (req, res) => {
    requireSession(req);
    checkForm(req);
    await mapBenchErrors(() => deps.bench.releaseBoard(param(req, 'board')))();
    res.redirect(303, '/console#quarantine');
  });
  return router;
}
