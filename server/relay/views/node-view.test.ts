import { describe, expect, it } from 'vitest';
import { botView, botWithOwnerView } from './node-view.js';

// GET /me's bots and GET /bots/me differ by the owner field alone, and which one an answer has is
// the view's choice, not the columns a repository happened to read (decision 0870).
describe('botView and botWithOwnerView', () => {
  const row = { bot_id: 'b1', name: 'ci', owner: 'n1', created_ms: 0 };

  it('botView shows no owner, even of a row read with one', () => {
    expect(JSON.stringify(botView(row))).toBe('{"bot_id":"b1","name":"ci","created_at":"1970-01-01T00:00:00.000Z"}');
  });

  it('botWithOwnerView shows the owner, between the name and the time', () => {
    expect(JSON.stringify(botWithOwnerView(row))).toBe('{"bot_id":"b1","name":"ci","owner":"n1","created_at":"1970-01-01T00:00:00.000Z"}');
  });
});
