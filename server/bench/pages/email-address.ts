/**
 * The waitlist's email rule (docs/pages.md, "Email addresses"). Deliberately a syntax check, not
 * a deliverability check: no DNS lookups, no quoted local parts, no IP-literal domains.
 *
 * After trimming surrounding whitespace the address must
 * - be at most 254 characters (RFC 5321 path limit) with a local part of at most 64,
 * - contain no whitespace or control characters anywhere,
 * - contain exactly one `@`,
 * - have a local part of RFC 5322 "atext" characters (letters, digits, ``!#$%&'*+/=?^_`{|}~-``,
 *   and any non-ASCII letter) in dot-separated non-empty runs,
 * - have a domain of at least two dot-separated labels, each 1..63 letters, digits or hyphens,
 *   not starting or ending with a hyphen, and a last label that is not all digits.
 * Normalisation: surrounding whitespace trimmed, Unicode NFC, domain lower-cased. The local part
 * keeps its case (RFC 5321 lets the receiving host treat it as case-sensitive).
 */

export const EMAIL_MAX_CHARS = 254;
export const EMAIL_LOCAL_MAX_CHARS = 64;
export const EMAIL_LABEL_MAX_CHARS = 63;

export type EmailVerdict = { ok: true; email: string } | { ok: false; reason: string };

const CONTROL_OR_SPACE = /[\p{Cc}\p{Cf}\p{Z}\s]/u;
const LOCAL_ATOM = /^[\p{L}\p{M}\p{N}!#$%&'*+/=?^_`{|}~-]+$/u;
const DOMAIN_LABEL = /^[\p{L}\p{M}\p{N}-]+$/u;

function chars(text: string): number {
  return [...text].length;
}

function fail(reason: string): EmailVerdict {
  return { ok: false, reason };
}

/** Validates and normalises one email address; `reason` says what is wrong, in words a person can act on. */
export function parseEmailAddress(raw: string): EmailVerdict {
  const email = raw.trim().normalize('NFC');
  if (email === '') return fail('The email address is empty.');
  const length = chars(email);
  if (length > EMAIL_MAX_CHARS) {
    return fail(`The email address is too long (${length - EMAIL_MAX_CHARS} characters more than ${EMAIL_MAX_CHARS}).`);
  }
  if (CONTROL_OR_SPACE.test(email)) return fail('The email address contains a space or a control character.');
  const at = email.split('@');
  if (at.length === 1) return fail('An email address must have an @-sign.');
  if (at.length > 2) return fail('An email address must have exactly one @-sign.');
  const [local, domain] = at as [string, string];
  if (local === '') return fail('There must be something before the @-sign.');
  if (domain === '') return fail('There must be something after the @-sign.');

  const localLength = chars(local);
  if (localLength > EMAIL_LOCAL_MAX_CHARS) {
    return fail(
      `The email address is too long before the @-sign (${localLength - EMAIL_LOCAL_MAX_CHARS} characters more than ${EMAIL_LOCAL_MAX_CHARS}).`,
    );
  }
  if (local.startsWith('.')) return fail('An email address cannot start with a period.');
  if (local.endsWith('.')) return fail('An email address cannot have a period immediately before the @-sign.');
  if (local.includes('..')) return fail('An email address cannot have two periods in a row.');
  const badLocal = [...new Set([...local].filter((ch) => ch !== '.' && !LOCAL_ATOM.test(ch)))];
  if (badLocal.length > 0) {
    return fail(`The email address contains invalid characters before the @-sign: ${badLocal.map((c) => `'${c}'`).join(', ')}.`);
  }

  const lowerDomain = domain.toLowerCase();
  if (lowerDomain.startsWith('.')) return fail('An email address cannot have a period immediately after the @-sign.');
  if (lowerDomain.endsWith('.')) return fail('An email address cannot end with a period.');
  if (lowerDomain.includes('..')) return fail('An email address cannot have two periods in a row.');
  const badDomain = [...new Set([...lowerDomain].filter((ch) => ch !== '.' && !DOMAIN_LABEL.test(ch)))];
  if (badDomain.length > 0) {
    return fail(`The part after the @-sign contains invalid characters: ${badDomain.map((c) => `'${c}'`).join(', ')}.`);
  }
  const labels = lowerDomain.split('.');
  if (labels.length < 2) return fail('The part after the @-sign is not valid. It should have a period.');
  for (const label of labels) {
    if (chars(label) > EMAIL_LABEL_MAX_CHARS) {
      return fail(`The part after the @-sign has a label longer than ${EMAIL_LABEL_MAX_CHARS} characters.`);
    }
    if (label.startsWith('-') || label.endsWith('-')) {
      return fail('The part after the @-sign has a label that starts or ends with a hyphen.');
    }
  }
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) {
    return fail('The part after the @-sign is not valid: it cannot end with an all-digit label (IP addresses are not accepted).');
  }
  return { ok: true, email: `${local}@${lowerDomain}` };
}
