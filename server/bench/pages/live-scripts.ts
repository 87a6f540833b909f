import { type SafeHtml, trustedHtml } from './html.js';

/**
 * The pages' only scripts: constants of ours (never data), run under the response's CSP nonce.
 * The pages stay complete without them; they only keep what is shown current.
 */

/** Every few seconds, replaces each element named in `/live/home`'s answer with its fresh HTML (rendered and escaped by the server). */
export const LIVE_HOME_SCRIPT: SafeHtml = trustedHtml(`document.addEventListener('DOMContentLoaded', () => {
  const refresh = async () => {
    try {
      const answer = await fetch('/live/home', { headers: { accept: 'application/json' }, cache: 'no-store' });
      if (!answer.ok) return;
      for (const [id, markup] of Object.entries(await answer.json())) {
        const element = document.getElementById(id);
        if (element) element.innerHTML = markup;
      }
    } catch {}
  };
  setInterval(refresh, 2000);
});`);

/** Appends a running job's UART to its page as it is printed (the stream in \`data-stream\`), then reloads for the outcome. */
export const LIVE_UART_SCRIPT: SafeHtml = trustedHtml(`document.addEventListener('DOMContentLoaded', () => {
  const out = document.querySelector('pre[data-stream]');
  if (!out) return;
  out.textContent = '';
  const stream = new EventSource(out.dataset.stream);
  stream.addEventListener('uart', (event) => { out.textContent += JSON.parse(event.data).text; });
  stream.addEventListener('end', () => { stream.close(); location.reload(); });
});`);
