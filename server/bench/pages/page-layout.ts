import { type SafeHtml, html, trustedHtml } from './html.js';

/**
 * The frame every human page shares: one inline style sheet (allowed by the CSP nonce of this
 * response), no scripts, no external assets, readable without CSS.
 */

const STYLE = trustedHtml(`
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa;
  --line: #d0d7de; --accent: #0a5bd3; --free: #1a7f37; --leased: #9a6700; --busy: #8250df; --offline: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --panel: #161b22;
  --line: #30363d; --accent: #4493f8; --free: #3fb950; --leased: #d29922; --busy: #a371f7; --offline: #f85149; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header, main, footer { max-width: 60rem; margin: 0 auto; padding: 0 1rem; }
header { padding-top: 1.5rem; border-bottom: 1px solid var(--line); }
header h1 { margin: 0; font-size: 1.8rem; }
header p { margin: .25rem 0 .75rem; color: var(--muted); }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0 0 .75rem; padding: 0; }
a { color: var(--accent); }
section { margin: 2rem 0; }
h2 { font-size: 1.3rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; }
table { border-collapse: collapse; width: 100%; font-size: .95rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.status { font-weight: 600; }
.status-free { color: var(--free); } .status-leased { color: var(--leased); }
.status-busy { color: var(--busy); } .status-offline { color: var(--offline); }
.muted, small { color: var(--muted); }
pre { background: var(--panel); border: 1px solid var(--line); padding: .75rem; overflow-x: auto; font-size: .85rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
dl.totals { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .75rem; }
dl.totals div { background: var(--panel); border: 1px solid var(--line); padding: .5rem .75rem; }
dl.totals dt { color: var(--muted); font-size: .85rem; } dl.totals dd { margin: 0; font-size: 1.6rem; font-weight: 600; }
form { display: grid; gap: .75rem; max-width: 32rem; }
label { display: grid; gap: .2rem; font-weight: 600; }
input, select, textarea, button { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 4px;
  background: var(--bg); color: var(--fg); }
button { background: var(--accent); color: #fff; border: 0; cursor: pointer; justify-self: start; padding: .5rem 1rem; }
.notice { border-left: 4px solid var(--free); background: var(--panel); padding: .5rem .75rem; }
footer { border-top: 1px solid var(--line); margin-top: 3rem; padding-bottom: 2rem; color: var(--muted); font-size: .9rem; }
`);

export interface LayoutInput {
  title: string;
  /** The CSP nonce of this response; the style element carries it. */
  styleNonce: string;
  /** Which navigation entry is the current page. */
  current: 'home' | 'stats' | 'console';
  /** The waitlist is open: the nav links to it (false: `--no-waitlist`, the link would lead nowhere). */
  waitlistOpen: boolean;
  /** Our own script for live updates (a constant of ours, never data), under the same nonce. */
  script?: SafeHtml;
  body: SafeHtml;
  footer: SafeHtml;
}

/** A complete HTML document around `body`. */
export function renderLayout(input: LayoutInput): string {
  const navLink = (href: string, label: string, page?: LayoutInput['current']) =>
    page === input.current ? html`<li><a href="${href}" aria-current="page">${label}</a></li>` : html`<li><a href="${href}">${label}</a></li>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${input.title}</title>
<meta name="description" content="hilbench: a hardware-in-the-loop bench where AI agents flash ELF firmware onto microcontroller boards and read their UART output.">
<link rel="icon" href="/logo.png" type="image/png">
<link rel="alternate" type="text/plain" href="/llms.txt" title="llms.txt">
<style nonce="${input.styleNonce}">${STYLE}</style>
${input.script ? html`<script nonce="${input.styleNonce}">${input.script}</script>` : ''}
</head>
<body>
<header>
<h1><a href="/">hilbench</a></h1>
<p>A hardware-in-the-loop bench for software agents: send an ELF, get it flashed and run, read the UART.</p>
<nav aria-label="Site"><ul>
${navLink('/', 'Bench status', 'home')}
${navLink('/#connect', 'Connect an agent')}
${navLink('/stats', 'Statistics', 'stats')}
${navLink('/openapi.json', 'OpenAPI')}
${navLink('/llms.txt', 'llms.txt')}
${input.waitlistOpen ? navLink('/#waitlist', 'Waitlist') : ''}
${navLink('/console', 'Console', 'console')}
</ul></nav>
</header>
<main>
${input.body}
</main>
<footer>
${input.footer}
</footer>
</body>
</html>
`.value;
}
