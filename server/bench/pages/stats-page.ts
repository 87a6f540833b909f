import type { BoardStatus } from '../domain/board-state.js';
import type { BenchSnapshot } from '../views/bench-snapshot.js';
import { html } from './html.js';
import { renderLayout } from './page-layout.js';
import { activityTable, boardsTable, snapshotFooter } from './snapshot-views.js';
import { jobStates } from '../../../wire/job-states.js';

export interface StatsPageInput {
  snapshot: BenchSnapshot;
  nowMs: number;
  styleNonce: string;
  /** The waitlist is open (its nav link and its total); false: `--no-waitlist`. */
  waitlistOpen: boolean;
}

/** Job states in lifecycle order; states the page does not know follow, alphabetically. */
const JOB_STATE_ORDER: readonly string[] = jobStates;
const BOARD_STATUSES: BoardStatus[] = ['free', 'leased', 'busy', 'offline'];

function orderedStates(byState: Record<string, number>): [string, number][] {
  const rank = (s: string) => {
    const i = JOB_STATE_ORDER.indexOf(s);
    return i === -1 ? JOB_STATE_ORDER.length : i;
  };
  return Object.entries(byState).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
}

/** `GET /stats`: totals, jobs by state, boards by status and in detail, recent activity. */
export function renderStatsPage(input: StatsPageInput): string {
  const { snapshot } = input;
  const t = snapshot.totals;
  const states = orderedStates(t.jobsByState);
  const statusCounts = BOARD_STATUSES.map((s) => [s, snapshot.boards.filter((b) => b.status === s).length] as const);
  const body = html`
<section id="totals">
<h2>Totals</h2>
<dl class="totals">
<div><dt>Registered agents</dt><dd>${t.agents}</dd></div>
<div><dt>Open sessions</dt><dd>${t.sessionsOpen}</dd></div>
<div><dt>Jobs, all time</dt><dd>${t.jobsTotal}</dd></div>
<div><dt>Boards</dt><dd>${snapshot.boards.length}</dd></div>
${input.waitlistOpen ? html`<div><dt>Waitlist</dt><dd>${t.waitlist}</dd></div>` : ''}
</dl>
</section>

<section id="jobs">
<h2>Jobs by state</h2>
${
  states.length === 0
    ? html`<p>No jobs yet.</p>`
    : html`<table>
<thead><tr><th scope="col">State</th><th scope="col" class="num">Jobs</th></tr></thead>
<tbody>
${states.map(([state, n]) => html`<tr><td>${state}</td><td class="num">${n}</td></tr>`)}
</tbody>
</table>`
}
</section>

<section id="boards">
<h2>Boards</h2>
<p>${statusCounts.map(([s, n], i) => html`${i > 0 ? ', ' : ''}<span class="status status-${s}">${n} ${s}</span>`)}.</p>
${boardsTable(snapshot, input.nowMs)}
</section>

<section id="activity">
<h2>Recent activity</h2>
${activityTable(snapshot.recentActivity)}
</section>
`;
  return renderLayout({
    title: 'hilbench statistics',
    styleNonce: input.styleNonce,
    current: 'stats',
    waitlistOpen: input.waitlistOpen,
    body,
    footer: snapshotFooter(snapshot),
  });
}
