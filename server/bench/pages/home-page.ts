import type { BenchSnapshot } from '../views/bench-snapshot.js';
import { html } from './html.js';
import { LIVE_HOME_SCRIPT } from './live-scripts.js';
import { renderLayout } from './page-layout.js';
import { activityTable, boardsTable, snapshotFooter } from './snapshot-views.js';
import { NOTE_MAX_CHARS, WAITLIST_KINDS } from './waitlist-form.js';
import { EMAIL_MAX_CHARS } from './email-address.js';

export interface HomePageInput {
  snapshot: BenchSnapshot;
  /** Host milliseconds now, from the injected clock (for "leased until … (in 1 min)"). */
  nowMs: number;
  /** Absolute base of the service without a trailing slash, used in the curl examples. */
  publicBaseUrl: string;
  /** A fresh CSRF token for the waitlist form. */
  csrfToken: string;
  styleNonce: string;
  /** The visitor just joined the waitlist (`/?joined=1` after the form's 303). */
  joined: boolean;
  /** The service serves MCP at `/mcp` (docs/mcp.md). */
  mcp?: boolean;
  /** The waitlist is open (default); false: the operator turned it off (`--no-waitlist`). */
  waitlistOpen?: boolean;
}

/** The board of the quick start: pico (the README's) when this bench can run it, else the walk-through's. */
function quickStartBoard(snapshot: BenchSnapshot): string {
  const pico = snapshot.boards.find((b) => b.id === 'pico' && b.status !== 'offline');
  return pico ? 'pico' : exampleBoard(snapshot);
}

/**
 * The shortest run, as the README's "Try it" shows it word for word (a test keeps them equal):
 * health, register, the example firmware this bench serves, flash without a session, read the
 * job once it ended (issue 31).
 */
export function quickStartCurl(publicBaseUrl: string, boardId: string): string {
  const board = shellQuote(boardId);
  return [
    `BASE=${shellQuote(publicBaseUrl)}`,
    'curl -s "$BASE/api/v1/health"                 # {"status":"ok",...} once the bench is up',
    'TOKEN=$(curl -s -X POST "$BASE/api/v1/agents/register" -d label=me | jq -r .token)',
    `curl -s -o hello.elf "$BASE/examples/${board}/hello.elf"   # the example firmware this bench ships`,
    'JOB=$(curl -s -X POST "$BASE/api/v1/jobs/flash" -H "authorization: Bearer $TOKEN" \\',
    `        -F board=${board} -F firmware=@hello.elf | jq -r .job_id)`,
    'curl -s "$BASE/api/v1/jobs/$JOB?wait=30&uart=text" -H "authorization: Bearer $TOKEN" | jq -r .uart.text',
  ].join('\n');
}

/** How an MCP client connects to `/mcp`: a client configuration as most MCP clients read it. */
export function mcpExample(publicBaseUrl: string): string {
  return JSON.stringify({ mcpServers: { hilbench: { type: 'http', url: `${publicBaseUrl}/mcp`, headers: { Authorization: 'Bearer <token from POST /api/v1/agents/register>' } } } }, null, 2);
}

/** Quotes `text` for a POSIX shell so a pasted example means exactly what it shows. */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

const KIND_LABELS: Record<(typeof WAITLIST_KINDS)[number], string> = {
  person: 'A person',
  team: 'A team or organisation',
  agent: 'A software agent (acting for someone)',
};

/** Which board the curl examples use: a free one if any, else any online one, else the first. */
function exampleBoard(snapshot: BenchSnapshot): string {
  const board =
    snapshot.boards.find((b) => b.status === 'free') ??
    snapshot.boards.find((b) => b.status !== 'offline') ??
    snapshot.boards[0];
  return board?.id ?? 'BOARD_ID';
}

/** The agent walk-through: register, open a session, flash, poll, heartbeat, end. */
export function curlWalkthrough(publicBaseUrl: string, boardId: string): string {
  const board = shellQuote(boardId);
  return [
    `BASE=${shellQuote(publicBaseUrl)}`,
    '',
    '# 1. Register an agent. The token is shown once: keep it.',
    `TOKEN=$(curl -sS -X POST "$BASE/api/v1/agents/register" -d label=my-agent | jq -r .token)`,
    '',
    '# 2. Open a session: an exclusive lease on the board, kept alive by heartbeats.',
    `SID=$(curl -sS -X POST "$BASE/api/v1/sessions" -H "authorization: Bearer $TOKEN" \\`,
    `  -d board=${board} -d idle_seconds=90 | jq -r .session_id)`,
    '',
    '# 3. Flash an ELF built for that board and capture its UART for 0.8 s.',
    `JOB=$(curl -sS -X POST "$BASE/api/v1/jobs/flash" -H "authorization: Bearer $TOKEN" \\`,
    `  -F board=${board} -F session="$SID" -F uart_seconds=0.8 -F firmware=@firmware.elf | jq -r .job_id)`,
    '',
    '# 4. Read the job once it is done or failed (queued -> flashing -> running -> done | failed):',
    '#    ?wait=60 answers as soon as it ends (else after 60 s with the job as it is: ask again).',
    `curl -sS "$BASE/api/v1/jobs/$JOB?wait=60" -H "authorization: Bearer $TOKEN" | jq -r '.state, .uart.text'`,
    '',
    '# 5. Heartbeat before idle_seconds pass, to keep the board.',
    `curl -sS -X POST "$BASE/api/v1/sessions/$SID/heartbeat" -H "authorization: Bearer $TOKEN"`,
    '',
    '# 6. End the session: the board is free for the next agent.',
    `curl -sS -X POST "$BASE/api/v1/sessions/$SID/end" -H "authorization: Bearer $TOKEN"`,
  ].join('\n');
}

const plural = (n: number, word: string) => (n === 1 ? word : `${word}s`);

/** Joining the waitlist from a shell: fetch the page for its token, then post the form. */
export function waitlistCurl(publicBaseUrl: string): string {
  return [
    `BASE=${shellQuote(publicBaseUrl)}`,
    `CSRF=$(curl -sS "$BASE/" | sed -n 's/.*name="csrf" value="\\([^"]*\\)".*/\\1/p')`,
    `curl -sS -X POST "$BASE/api/v1/waitlist" -d kind=agent --data-urlencode email=you@example.org \\`,
    `  --data-urlencode note='boards I would test' --data-urlencode csrf="$CSRF"`,
  ].join('\n');
}

/** `GET /`: what hilbench is, live board status, recent activity, how to connect, the waitlist form. */
function mcpSection(publicBaseUrl: string) {
  return html`<h3 id="mcp">MCP</h3>
<p>Agents that speak the Model Context Protocol can use the bench as tools (list_boards, run_firmware, open_session,
heartbeat_session, end_session, get_job, stream_job_uart, cancel_job) at <code>${publicBaseUrl}/mcp</code> (streamable HTTP, with the agent's bearer token):</p>
<pre><code>${mcpExample(publicBaseUrl)}</code></pre>`;
}

/** The waitlist form: on a self-hosted bench, the list of people who want a board here, kept by this bench's operator. */
function waitlistSection(input: HomePageInput) {
  return html`<section id="waitlist">
<h2>Join the waitlist</h2>
${input.joined ? html`<p class="notice" role="status">Thank you: your address is on the waitlist. The operator of this bench will write when more boards open here.</p>` : ''}
<p>This list belongs to the operator of this bench: leave an address, and they will write when more boards or real hardware
open up here. Nothing leaves this server (see <a href="#legal">data</a>); an operator who does not want a list starts the
bench with <code>--no-waitlist</code>.</p>
<form method="post" action="/api/v1/waitlist">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<label>Email address
<input type="email" name="email" required maxlength="${EMAIL_MAX_CHARS}" autocomplete="email"></label>
<label>You are
<select name="kind">
${WAITLIST_KINDS.map((k) => html`<option value="${k}">${KIND_LABELS[k]}</option>`)}
</select></label>
<label>What would you like to test? <small>(optional, up to ${NOTE_MAX_CHARS} characters)</small>
<textarea name="note" rows="3" maxlength="${NOTE_MAX_CHARS}"></textarea></label>
<button type="submit">Join the waitlist</button>
</form>
<p class="muted">Agents can join too: <code>POST /api/v1/waitlist</code> with the form fields above, taking
<code>csrf</code> from this page's form (valid for two hours):</p>
<pre><code>${waitlistCurl(input.publicBaseUrl)}</code></pre>
</section>`;
}

export function renderHomePage(input: HomePageInput): string {
  const { snapshot, publicBaseUrl } = input;
  const free = snapshot.boards.filter((b) => b.status === 'free').length;
  const body = html`
<section id="about">
<h2>What this is</h2>
<p>hilbench is an open-source hardware-in-the-loop test bench. Software agents send a firmware image
(ELF) and a board name over HTTP; the bench flashes it onto that board, whether a simulator, an
emulator or real hardware attached to a single-board computer, runs it and returns what it printed on its UART.
Agents take an exclusive, heartbeat-renewed session on a board so their runs are not interleaved with anyone else's.</p>
<p>${free} of ${snapshot.boards.length} ${plural(snapshot.boards.length, 'board')} free right now, ${snapshot.totals.sessionsOpen} ${plural(snapshot.totals.sessionsOpen, 'session')} open,
${snapshot.totals.jobsTotal} ${plural(snapshot.totals.jobsTotal, 'job')} run so far. <a href="/stats">More statistics</a>.</p>
</section>

<section id="quick-start">
<h2>Quick start</h2>
<p>Run this bench's example firmware from a shell (<code>curl</code> and <code>jq</code>), as the README shows:
the job takes the board for itself, no session needed, and <code>?wait=30</code> answers once it has run.</p>
<pre><code>${quickStartCurl(publicBaseUrl, quickStartBoard(snapshot))}</code></pre>
</section>

<section id="boards">
<h2>Boards</h2>
<div id="live-boards">${boardsTable(snapshot, input.nowMs)}</div>
</section>

<section id="activity">
<h2>Recent activity</h2>
<div id="live-activity">${activityTable(snapshot.recentActivity)}</div>
</section>

<section id="connect">
<h2>Connect an agent</h2>
<p>Everything an agent needs is under <code>/api/v1</code>, described in full by <a href="/openapi.json">the OpenAPI document</a>
and summarised for language models in <a href="/llms.txt">llms.txt</a>. Errors come back as
<code>{"detail": "..."}</code>; invalid input as 422 with one entry per failing field.
The examples below use <code>curl</code> and <code>jq</code>:</p>
<ol>
<li>register once and keep the token,</li>
<li>open a session on a board (send heartbeats before <code>idle_seconds</code> pass, or the lease expires),</li>
<li>flash an ELF and poll the job until it is <code>done</code> or <code>failed</code>,</li>
<li>end the session so the next agent gets the board.</li>
</ol>
<pre><code>${curlWalkthrough(publicBaseUrl, exampleBoard(snapshot))}</code></pre>
${input.mcp ? mcpSection(publicBaseUrl) : ''}
</section>

${input.waitlistOpen === false ? '' : waitlistSection(input)}

<section id="legal">
<h2>Data and licence</h2>
<p>The waitlist keeps the email address, the kind and the note you submit, and when you joined; nothing else, and no cookies are set.
Submitting an address that is already listed changes nothing. Agents are shown here only by the label they registered with.
Firmware and UART output are visible only to the agent that submitted them and to the bench operator.
hilbench is free software under the MIT licence.</p>
</section>
`;
  return renderLayout({
    title: 'hilbench: hardware-in-the-loop bench for agents',
    styleNonce: input.styleNonce,
    current: 'home',
    waitlistOpen: input.waitlistOpen !== false,
    body,
    footer: snapshotFooter(snapshot),
    script: LIVE_HOME_SCRIPT,
  });
}
