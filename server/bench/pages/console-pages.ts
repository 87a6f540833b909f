import type { AdminBody, JobBody } from '../../../wire/bench/bench-schemas.js';
import { html, type SafeHtml } from './html.js';
import { LIVE_UART_SCRIPT } from './live-scripts.js';
import { renderLayout } from './page-layout.js';
import { formatUtc } from './snapshot-views.js';

/** The operator's console (docs/pages.md, "Console"): every job, a job with its UART, a board's history, quarantines. */

type AdminJob = AdminBody['recent_jobs'][number];

const footer = html`<p>The operator's console of this bench. <a href="/">Bench status</a>.</p>`;
const signOut = (csrf: string) =>
  html`<form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Sign out</button></form>`;

/** What every console page's frame needs: this response's CSP nonce and whether the nav links the waitlist. */
export interface ConsoleFrame {
  styleNonce: string;
  waitlistOpen: boolean;
}

function page(title: string, frame: ConsoleFrame, body: SafeHtml, script?: SafeHtml): string {
  const { styleNonce, waitlistOpen } = frame;
  return renderLayout({ title: `${title} · hilbench console`, styleNonce, waitlistOpen, current: 'console', body, footer, ...(script ? { script } : {}) });
}

export function renderSignIn(input: ConsoleFrame & { csrf: string; problem?: string; closed: boolean }): string {
  const body = input.closed
    ? html`<section><h2>Console</h2><p>The console is closed: this server was started without an administrator token (<code>--admin-token</code>).</p></section>`
    : html`<section><h2>Sign in to the console</h2>
${input.problem ? html`<p class="notice" role="alert">${input.problem}</p>` : ''}
<form method="post" action="/console/sign-in">
<label for="token">Administrator token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<input type="hidden" name="csrf" value="${input.csrf}">
<button type="submit">Sign in</button>
</form></section>`;
  return page('Sign in', input, body);
}

function jobsTable(jobs: readonly AdminJob[]): SafeHtml {
  if (jobs.length === 0) return html`<p>No jobs yet.</p>`;
  const rows = jobs.map(
    (j) => html`<tr><td><a href="/console/jobs/${j.job_id}">${j.job_id}</a></td><td><a href="/console/boards/${j.board}">${j.board}</a></td><td>${j.agent_label}</td><td>${j.state}</td><td>${formatUtc(j.created_at)}</td><td>${j.failure ? `${j.failure.kind}: ${j.failure.message}` : ''}</td></tr>`,
  );
  return html`<table><thead><tr><th>Job</th><th>Board</th><th>Agent</th><th>State</th><th>Created</th><th>Failure</th></tr></thead><tbody>${rows}</tbody></table>`;
}

type AdminBoard = AdminBody['boards'][number];
type AdminPool = NonNullable<AdminBoard['instances']>;

const releaseForm = (id: string, csrf: string) =>
  html`<form method="post" action="/console/boards/${id}/release"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Release</button></form>`;

/** A pool of several (decisions 0510, 0551): its counts, then each instance with its worker, holder and quarantine. */
function poolTable(board: AdminBoard, pool: AdminPool): SafeHtml {
  const rows = pool.list.map(
    (i) =>
      html`<tr><td><code>${i.instance}</code></td><td>${i.quarantined ? 'quarantined' : i.status}</td><td>${i.workers.map((w) => `${w.label} (${w.worker_id}${w.online ? '' : ', silent'})`).join(', ')}</td><td>${i.held_by ?? ''}</td><td>${i.offline_reason ?? ''}</td></tr>`,
  );
  return html`<h3 id="pool-${board.id}">${board.id}: ${pool.total} instances</h3>
<p>${pool.free} free, ${pool.busy} busy, ${pool.leased} leased, ${pool.offline} offline, ${pool.quarantined} quarantined.</p>
<table><thead><tr><th>Instance</th><th>Status</th><th>Worker</th><th>Held by</th><th>Why offline</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** The session queue of every board (decisions 0555, 0605): who waits, for what, in which place, since when. */
function waitingTable(boards: readonly AdminBoard[]): SafeHtml {
  const rows = boards.flatMap((b) =>
    b.waiting.map(
      (w) =>
        html`<tr><td><a href="/console/boards/${b.id}">${b.id}</a></td><td><code>${w.queue}</code></td><td>${w.position}</td><td>${w.agent_label} (${w.agent_id})</td><td>${formatUtc(w.since)}</td></tr>`,
    ),
  );
  if (rows.length === 0) return html`<p>Nobody is waiting for a board.</p>`;
  return html`<table><thead><tr><th>Board</th><th>Queue</th><th>Position</th><th>Agent</th><th>Waiting since</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function renderConsoleIndex(input: ConsoleFrame & { csrf: string; admin: AdminBody }): string {
  // Boards quarantined as a whole, and single instances of pools of several (released one by one).
  const quarantined = [
    ...input.admin.boards
      .filter((b) => b.health?.quarantined)
      .map((b) => ({ id: b.id, link: b.id, since: b.health?.quarantined_since ?? null, reason: b.health?.quarantine_reason ?? '' })),
    ...input.admin.boards.flatMap((b) =>
      (b.instances?.list ?? []).filter((i) => i.quarantined).map((i) => ({ id: i.instance, link: b.id, since: null, reason: i.offline_reason ?? '' })),
    ),
  ];
  const quarantines =
    quarantined.length === 0
      ? html`<p>No board is quarantined.</p>`
      : html`<table><thead><tr><th>Board or instance</th><th>Since</th><th>Reason</th><th></th></tr></thead><tbody>${quarantined.map(
          (q) => html`<tr><td><a href="/console/boards/${q.link}">${q.id}</a></td><td>${q.since ? formatUtc(q.since) : ''}</td><td>${q.reason}</td><td>${releaseForm(q.id, input.csrf)}</td></tr>`,
        )}</tbody></table>`;
  const boards = input.admin.boards.map(
    (b) => html`<li><a href="/console/boards/${b.id}">${b.id}</a> (${b.status}, ${b.queued_jobs} queued${b.instances ? html`, <a href="#pool-${b.id}">${b.instances.total} instances</a>` : ''})</li>`,
  );
  const pools = input.admin.boards.filter((b) => b.instances).map((b) => poolTable(b, b.instances!));
  const body = html`<section><h2>Console</h2>${signOut(input.csrf)}</section>
<section id="quarantine"><h2>Quarantined boards</h2>${quarantines}</section>
<section id="boards"><h2>Boards</h2><ul>${boards}</ul></section>
${pools.length > 0 ? html`<section id="pools"><h2>Pools</h2>${pools}</section>` : ''}
<section id="waiting"><h2>Waiting for a board</h2>${waitingTable(input.admin.boards)}</section>
<section id="jobs"><h2>Recent jobs, every agent</h2>${jobsTable(input.admin.recent_jobs)}</section>`;
  return page('Console', input, body);
}

const finished = (state: string) => state === 'done' || state === 'failed';

export function renderConsoleJob(input: ConsoleFrame & { job: JobBody; agentLabel: string }): string {
  const { job } = input;
  const elf = job.firmware.elf;
  const t = job.timings_ms;
  const outcome = job.failure
    ? html`<p>Failed: <strong>${job.failure.kind}</strong>: ${job.failure.message}</p>`
    : job.stop
      ? html`<p>Stopped: ${job.stop.reason}${job.stop.exit_code !== undefined ? ` (exit code ${job.stop.exit_code})` : ''}${job.stop.message ? `: ${job.stop.message}` : ''}, after ${job.stop.elapsed_seconds} s of ${job.uart?.time_base ?? 'device'} time</p>`
      : html`<p>Not finished yet.</p>`;
  const live = !finished(job.state);
  const uart = live
    ? html`<pre id="uart" data-stream="/console/jobs/${job.job_id}/uart">(the UART appears here as it is printed)</pre>`
    : html`<pre id="uart">${job.uart?.text ?? '(no UART captured)'}</pre>`;
  const body = html`<section><h2>Job ${job.job_id}</h2>
<p><a href="/console">Console</a> · board <a href="/console/boards/${job.board}">${job.board}</a> · agent ${input.agentLabel} · state <strong id="job-state">${job.state}</strong></p>
${outcome}</section>
<section id="firmware"><h2>Firmware</h2><p>sha256 <code>${job.firmware.sha256}</code>, ${job.firmware.size_bytes} bytes, ${elf.machine_name}, entry 0x${elf.entry.toString(16)}, ${elf.segments.length} loadable segments.</p></section>
<section id="timings"><h2>Timings</h2><p>Created ${formatUtc(job.created_at)}; queued ${t.queued ?? '–'} ms, flash ${t.flash ?? '–'} ms, run ${t.run ?? '–'} ms; capture ${job.uart_seconds} s.</p></section>
<section id="uart-output"><h2>UART</h2>${uart}</section>`;
  return page(`Job ${job.job_id}`, input, body, live ? LIVE_UART_SCRIPT : undefined);
}

export function renderConsoleBoard(input: ConsoleFrame & { boardId: string; history: readonly AdminJob[] }): string {
  const ended = input.history.filter((j) => finished(j.state));
  const passed = ended.filter((j) => j.state === 'done').length;
  const rate = ended.length === 0 ? 'no finished jobs yet' : `${Math.round((passed / ended.length) * 100)} % of the last ${ended.length} finished jobs done (${ended.length - passed} failed)`;
  const body = html`<section><h2>Board ${input.boardId}</h2><p><a href="/console">Console</a></p><p id="pass-rate">Pass rate: ${rate}.</p></section>
<section id="history"><h2>Recent jobs</h2>${jobsTable(input.history)}</section>`;
  return page(`Board ${input.boardId}`, input, body);
}
