import { describe, expect, it } from 'vitest';
import { NOTE_MAX_CHARS, parseWaitlistForm } from './waitlist-form.js';

function fields(entries: [string, string][]): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const [k, v] of entries) map.set(k, [...(map.get(k) ?? []), v]);
  return map;
}

describe('parseWaitlistForm', () => {
  it('applies the spec defaults: kind "person", note "", csrf ""', () => {
    expect(parseWaitlistForm(fields([['email', 'a@example.org']]))).toEqual({
      ok: true,
      form: { kind: 'person', email: 'a@example.org', note: '', csrf: '' },
    });
  });

  it('keeps csrf as given (the router checks it) and trims the note', () => {
    const result = parseWaitlistForm(fields([['kind', 'agent'], ['email', 'a@example.org'], ['note', '  hi \n'], ['csrf', 'tok']]));
    expect(result).toEqual({ ok: true, form: { kind: 'agent', email: 'a@example.org', note: 'hi', csrf: 'tok' } });
  });

  it('counts the note in characters, not UTF-16 units or bytes', () => {
    const emoji = '🔌'.repeat(NOTE_MAX_CHARS); // 500 characters, 1000 UTF-16 units
    expect(parseWaitlistForm(fields([['email', 'a@example.org'], ['note', emoji]])).ok).toBe(true);
    const result = parseWaitlistForm(fields([['email', 'a@example.org'], ['note', `${emoji}x`]]));
    expect(result.ok).toBe(false);
  });

  it('refuses an explicitly empty kind (the default applies only when the field is absent)', () => {
    const result = parseWaitlistForm(fields([['kind', ''], ['email', 'a@example.org']]));
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          type: 'literal_error',
          loc: ['body', 'kind'],
          msg: "Input should be 'person', 'team' or 'agent'",
          input: '',
          ctx: { expected: "'person', 'team' or 'agent'" },
        },
      ],
    });
  });

  it('is case-sensitive about kind, like a pydantic Literal', () => {
    expect(parseWaitlistForm(fields([['kind', 'Person'], ['email', 'a@example.org']])).ok).toBe(false);
  });

  it('reports a repeated csrf field too', () => {
    const result = parseWaitlistForm(fields([['email', 'a@example.org'], ['csrf', 'a'], ['csrf', 'b']]));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((e) => e.loc)).toEqual([['body', 'csrf']]);
  });
});
