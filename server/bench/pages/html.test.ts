import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeHtml, html, SafeHtml, trustedHtml } from './html.js';

describe('escapeHtml', () => {
  it('escapes the five characters that matter in content and quoted attributes', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;');
  });

  it('never lets a markup character through, and round-trips through an HTML text decoder', () => {
    const decode = (s: string) =>
      s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const escaped = escapeHtml(text);
        expect(escaped).not.toMatch(/[<>"']/);
        expect(escaped.replace(/&(amp|lt|gt|quot|#39);/g, '')).not.toContain('&');
        expect(decode(escaped)).toBe(text);
      }),
    );
  });
});

describe('html template', () => {
  it('escapes interpolated text and numbers, keeps SafeHtml, flattens lists, drops null/undefined/false', () => {
    const label = '<b>bold</b>';
    const inner = html`<em>${label}</em>`;
    const out = html`<p title="${label}">${inner} ${[1, '<2>', html`<i>3</i>`]}${null}${undefined}${false}</p>`;
    expect(out).toBeInstanceOf(SafeHtml);
    expect(out.value).toBe(
      '<p title="&lt;b&gt;bold&lt;/b&gt;"><em>&lt;b&gt;bold&lt;/b&gt;</em> 1&lt;2&gt;<i>3</i></p>',
    );
    expect(String(out)).toBe(out.value);
  });

  it('treats a string that looks like markup as text: only html`` and trustedHtml make markup', () => {
    expect(html`${'<script>'}`.value).toBe('&lt;script&gt;');
    expect(html`${trustedHtml('<hr>')}`.value).toBe('<hr>');
  });
});
