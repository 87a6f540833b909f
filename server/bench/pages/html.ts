/**
 * HTML building for the human pages. Everything interpolated into `html\`...\`` goes through
 * {@link escapeHtml} unless it is already {@link SafeHtml} (the result of another `html` call),
 * so escaping is the default and forgetting it is not possible by omission: board names,
 * agent labels, offline reasons and every other value that came from users or data end up as text.
 */

/** A fragment of markup that is already safe to insert as is. Only `html` (and `trustedHtml`) make one. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * The one escaping function of the pages: makes any text safe as element content and inside
 * double- or single-quoted attribute values.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

/** What may be interpolated: text and numbers are escaped, SafeHtml is kept, lists are concatenated. */
export type HtmlValue = SafeHtml | string | number | null | undefined | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** Tagged template: the literal parts are markup, every `${value}` is escaped (see {@link HtmlValue}). */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

/**
 * Marks a constant written in this folder (the inline style sheet, the SVG logo) as markup.
 * Never pass it anything that came from a request, a snapshot or configuration.
 */
export function trustedHtml(constantMarkup: string): SafeHtml {
  return new SafeHtml(constantMarkup);
}
