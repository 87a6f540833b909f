import { describe, expect, it } from 'vitest';
import { unstorableText } from './storable-text.js';
import { eventKindLabel, shownJson } from './peer-ingest.js';

describe('eventKindLabel (how last_error names a peer event kind)', () => {
  it('names a known kind as it is and any other as JSON', () => {
    expect(eventKindLabel('vote')).toBe('vote');
    expect(eventKindLabel('k\u0000')).toBe('"k\\u0000"');
    expect(eventKindLabel(undefined)).toBe('none');
  });

  it('cuts a long one at 64 characters, never between the halves of a surrogate pair', () => {
    expect(eventKindLabel('k'.repeat(1000))).toBe(`"${'k'.repeat(63)}…`);
    // The quote and 62 k: the pair's first half is the 64th character.
    const label = eventKindLabel(`${'k'.repeat(62)}😀${'k'.repeat(10)}`);
    expect(label).toBe(`"${'k'.repeat(62)}…`);
    expect(unstorableText(label)).toBeNull();
    expect(shownJson(['k\u0000'], 64)).toBe('["k\\u0000"]');
  });
});
