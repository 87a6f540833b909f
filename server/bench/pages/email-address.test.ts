import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EMAIL_MAX_CHARS, parseEmailAddress } from './email-address.js';

describe('parseEmailAddress', () => {
  it.each([
    ['ada@example.org', 'ada@example.org'],
    ['  Ada@Example.ORG\t', 'Ada@example.org'],
    ['first.last+tag@sub.example.co.uk', 'first.last+tag@sub.example.co.uk'],
    ["o'brien!#$%&*/=?^_`{|}~-@example.org", "o'brien!#$%&*/=?^_`{|}~-@example.org"],
    ['josé@bücher.example', 'josé@bücher.example'],
    ['a@x-y.io', 'a@x-y.io'],
    ['a@123.example', 'a@123.example'],
  ])('accepts %j as %j', (input, normalised) => {
    expect(parseEmailAddress(input)).toEqual({ ok: true, email: normalised });
  });

  it.each([
    ['', 'The email address is empty.'],
    ['   ', 'The email address is empty.'],
    ['plain', 'An email address must have an @-sign.'],
    ['a@b@example.org', 'An email address must have exactly one @-sign.'],
    ['@example.org', 'There must be something before the @-sign.'],
    ['a@', 'There must be something after the @-sign.'],
    ['a b@example.org', 'The email address contains a space or a control character.'],
    ['a\u0000b@example.org', 'The email address contains a space or a control character.'],
    ['ab@exa\nmple.org', 'The email address contains a space or a control character.'],
    ['a\u200bb@example.org', 'The email address contains a space or a control character.'],
    ['.a@example.org', 'An email address cannot start with a period.'],
    ['a.@example.org', 'An email address cannot have a period immediately before the @-sign.'],
    ['a..b@example.org', 'An email address cannot have two periods in a row.'],
    ['a(b)@example.org', "The email address contains invalid characters before the @-sign: '(', ')'."],
    ['"quoted"@example.org', `The email address contains invalid characters before the @-sign: '"'.`],
    ['a@localhost', 'The part after the @-sign is not valid. It should have a period.'],
    ['a@.example.org', 'An email address cannot have a period immediately after the @-sign.'],
    ['a@example.org.', 'An email address cannot end with a period.'],
    ['a@example..org', 'An email address cannot have two periods in a row.'],
    ['a@exa_mple.org', "The part after the @-sign contains invalid characters: '_'."],
    ['a@[127.0.0.1]', "The part after the @-sign contains invalid characters: '[', ']'."],
    ['a@-example.org', 'The part after the @-sign has a label that starts or ends with a hyphen.'],
    ['a@example-.org', 'The part after the @-sign has a label that starts or ends with a hyphen.'],
    [`a@${'l'.repeat(64)}.org`, 'The part after the @-sign has a label longer than 63 characters.'],
    ['a@127.0.0.1', 'The part after the @-sign is not valid: it cannot end with an all-digit label (IP addresses are not accepted).'],
    [`${'l'.repeat(65)}@example.org`, 'The email address is too long before the @-sign (1 characters more than 64).'],
    [`aaaaaaaa@${'d'.repeat(60)}.${'d'.repeat(60)}.${'d'.repeat(60)}.${'d'.repeat(60)}.org`, 'The email address is too long (2 characters more than 254).'],
  ])('refuses %j: %s', (input, reason) => {
    expect(parseEmailAddress(input)).toEqual({ ok: false, reason });
  });

  it('accepts exactly 254 characters', () => {
    const email = `aaaaaa@${'d'.repeat(60)}.${'d'.repeat(60)}.${'d'.repeat(60)}.${'d'.repeat(60)}.org`;
    expect(email.length).toBe(EMAIL_MAX_CHARS);
    expect(parseEmailAddress(email).ok).toBe(true);
  });

  it('accepts RFC 5322 dot-atom addresses and normalisation is idempotent (property)', () => {
    fc.assert(
      fc.property(fc.emailAddress(), fc.constantFrom('', ' ', '\t'), (email, pad) => {
        const verdict = parseEmailAddress(`${pad}${email}${pad}`);
        expect(verdict.ok).toBe(true);
        if (!verdict.ok) return;
        expect(verdict.email.toLowerCase()).toBe(email.toLowerCase());
        expect(parseEmailAddress(verdict.email)).toEqual(verdict);
      }),
    );
  });

  it('whatever the input, never throws and accepts only addresses with one @ and no whitespace (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        const verdict = parseEmailAddress(text);
        if (verdict.ok) {
          expect(verdict.email.split('@')).toHaveLength(2);
          expect(verdict.email).not.toMatch(/\s/);
          expect([...verdict.email].length).toBeLessThanOrEqual(EMAIL_MAX_CHARS);
        } else {
          expect(verdict.reason.length).toBeGreaterThan(0);
        }
      }),
    );
  });
});
