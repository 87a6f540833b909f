import type { ActivitySnapshot, BenchSnapshot, BoardSnapshot } from '../views/bench-snapshot.js';
import { type SafeHtml, html } from './html.js';
import type { PoolView } from '../domain/board-state.js';

/** Pieces of the snapshot both pages show: board status, board table, recent activity, footer. */

/** "2026-11-20 22:45:10 UTC" from an ISO 8601 string; the input itself when it does not parse. */
export function formatUtc(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** "in 1 min 5 s", "in 3 h 2 min", "now" for a delta in milliseconds (negative: already passed). */
export function formatIn(deltaMs: number): string {
  if (deltaMs <= 0) return 'now';
  const totalSeconds = Math.ceil(deltaMs / 1000);
  const h = Math.floor(totalSeconds / 3600);
  const min = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  if (h > 0) return `in ${h} h ${min} min`;
  if (min > 0) return `in ${min} min ${s} s`;
  return `in ${s} s`;
}

function timeElement(iso: string): SafeHtml {
  return html`<time datetime="${iso}">${formatUtc(iso)}</time>`;
}

/** The status cell of one board: free / leased by whom until when / busy / offline with the reason. */
export function boardStatus(board: BoardSnapshot, nowMs: number): SafeHtml {
  switch (board.status) {
    case 'free':
      return html`<span class="status status-free">free</span>`;
    case 'leased': {
      const who = board.leasedBy ? html` by <strong>${board.leasedBy}</strong>` : '';
      if (!board.leaseExpiresAt) return html`<span class="status status-leased">leased</span>${who}`;
      const expiresMs = Date.parse(board.leaseExpiresAt);
      const relative = Number.isNaN(expiresMs) ? '' : html` <small>(${formatIn(expiresMs - nowMs)})</small>`;
      return html`<span class="status status-leased">leased</span>${who} until ${timeElement(board.leaseExpiresAt)}${relative}`;
    }
    case 'busy':
      return html`<span class="status status-busy">busy</span> <small>running a job</small>`;
    case 'offline':
      return html`<span class="status status-offline">offline</span>${board.offlineReason ? html`: ${board.offlineReason}` : ''}`;
  }
}

/** A pool of several instances (decisions 0510, 0551): its counts, and each instance with its worker, holder and quarantine. */
function poolLine(pool: PoolView): SafeHtml {
  const each = pool.instances.map(
    (i) =>
      html`<li><code>${i.instance}</code> ${i.quarantined ? 'quarantined' : i.status}${i.heldBy ? html` by ${i.heldBy}` : ''}${i.offlineReason ? html`: ${i.offlineReason}` : ''} <small>(worker ${i.workers.map((w) => w.label).join(', ')})</small></li>`,
  );
  return html`<br><small>${pool.free} of ${pool.total} instances free, ${pool.busy} busy, ${pool.leased} leased, ${pool.offline} offline${pool.quarantined > 0 ? ` (${pool.quarantined} quarantined)` : ''}</small>
<details><summary>instances</summary><ul>${each}</ul></details>`;
}

/** Table of every board with its MCU, backend, live status and queue length. */
export function boardsTable(snapshot: BenchSnapshot, nowMs: number): SafeHtml {
  if (snapshot.boards.length === 0) return html`<p>No boards are configured on this bench.</p>`;
  const rows = snapshot.boards.map(
    (b) => html`<tr id="board-${b.id}">
<td><strong>${b.name}</strong><br><code>${b.id}</code>${b.description ? html`<br><small>${b.description}</small>` : ''}</td>
<td>${b.mcu}<br><small>${b.architecture}</small></td>
<td><code>${b.backend}</code></td>
<td>${boardStatus(b, nowMs)}${b.pool ? poolLine(b.pool) : ''}</td>
<td class="num">${b.queuedJobs}</td>
</tr>`,
  );
  return html`<table>
<caption class="muted">Live status as of ${timeElement(snapshot.generatedAt)}</caption>
<thead><tr><th scope="col">Board</th><th scope="col">MCU</th><th scope="col">Backend</th><th scope="col">Status</th><th scope="col" class="num">Queued jobs</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`;
}

/** The most recent jobs, newest first as the snapshot orders them. */
export function activityTable(activity: readonly ActivitySnapshot[]): SafeHtml {
  if (activity.length === 0) return html`<p>No jobs have run yet.</p>`;
  const rows = activity.map(
    (a) => html`<tr>
<td>${timeElement(a.at)}</td>
<td><code>${a.jobId}</code></td>
<td><code>${a.board}</code></td>
<td>${a.agentLabel}</td>
<td>${a.state}</td>
</tr>`,
  );
  return html`<table>
<thead><tr><th scope="col">When</th><th scope="col">Job</th><th scope="col">Board</th><th scope="col">Agent</th><th scope="col">State</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`;
}

/** Footer line: interface version and snapshot time. */
export function snapshotFooter(snapshot: BenchSnapshot): SafeHtml {
  return html`<p>hilbench ${snapshot.version}, bench service interface 0.3.4. Page generated ${timeElement(snapshot.generatedAt)}.
<a href="/llms.txt">llms.txt</a> · <a href="/openapi.json">OpenAPI</a> · <a href="/.well-known/ai-plugin.json">ai-plugin.json</a> · <a href="/#legal">Data and licence</a></p>`;
}
