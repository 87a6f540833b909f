import { createClock } from '@sinonjs/fake-timers';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { relayLimits } from '../../wire/relay/relay-facts.js';
import { call, relayForTests } from '../support/relay-test-kit.js';
import { relayTableRows } from '../support/relay-tables.js';

/**
 * A file upload refused for its title leaves no file in the store (nor a row: on PostgreSQL the
 * bytes live in a table), and its 422 points at the field (it once left the file and pointed at ["body"]).
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const { relay, alice, dataDir } = relayForTests({ clock, nodes: ['alice'] });

const filesDir = () => readdirSync(join(dataDir, 'files')).sort();
/** The files dir and every table, row by row. */
const stored = async () => ({ files: filesDir(), tables: await relayTableRows(dataDir) });
function upload(bytes: Uint8Array, fields: { title?: string; filename?: string }) {
  const form = new FormData();
  if (fields.title !== undefined) form.append('title', fields.title);
  form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), fields.filename ?? 'firmware.bin');
  return call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
}

describe('a refused file upload changes nothing', () => {
  it.each([
    ['a title over the limit', { title: 'x'.repeat(relayLimits.titleMaxChars + 1) }, 'string_too_long'],
    ['a title with a line break', { title: 'two\nlines' }, 'value_error'],
  ])('%s: 422 at ["body", "title"], and the files dir and tables are unchanged', async (_name, fields, type) => {
    const before = await stored();
    const r = await upload(new TextEncoder().encode(`bytes for ${type} ${before.files.length}`), fields);
    expect(r.status).toBe(422);
    expect((r.body.detail as { loc: unknown; type: string }[])[0]).toMatchObject({ loc: ['body', 'title'], type });
    expect(await stored()).toEqual(before);
  });

  it('the same bytes with a valid title are then stored (201), once', async () => {
    const bytes = new TextEncoder().encode('bytes refused once, then accepted');
    const before = await stored();
    expect((await upload(bytes, { title: 'bad\ntitle' })).status).toBe(422);
    expect(await stored()).toEqual(before);
    const ok = await upload(bytes, { title: 'good title' });
    expect(ok.status).toBe(201);
    expect(filesDir()).toEqual([...before.files, ok.body.id as string].sort());
  });

  it('refusing an upload whose bytes are already stored keeps the stored file', async () => {
    const bytes = new TextEncoder().encode('already here');
    const ok = await upload(bytes, { title: 'first' });
    expect(ok.status).toBe(201);
    const before = await stored();
    expect((await upload(bytes, { title: 'y'.repeat(relayLimits.titleMaxChars + 1) })).status).toBe(422);
    expect(await stored()).toEqual(before);
  });

  it('a form the relay would read only in part (a second file, more fields than it reads, a field cut at 4096 bytes) is a 422, not stored without what it dropped', async () => {
    const bytes = new TextEncoder().encode('a form read in part');
    const forms: Array<[string, (form: FormData) => void, unknown[]]> = [
      ['a second file', (form) => form.append('file', new Blob([new Uint8Array([1])]), 'second.bin'), ['body', 'file']],
      ['a fifth field (the authorship after four others would be dropped)', (form) => { for (const name of ['a', 'b', 'c', 'd', 'authorship']) form.append(name, '{}'); }, ['body']],
      ['a field over 4096 bytes', (form) => form.append('authorship', 'x'.repeat(4097)), ['body', 'authorship']],
    ];
    for (const [what, add, loc] of forms) {
      const before = await stored();
      const form = new FormData();
      form.append('file', new Blob([bytes]), 'firmware.bin');
      add(form);
      const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
      expect([what, r.status]).toEqual([what, 422]);
      expect((r.body.detail as { loc: unknown }[])[0]!.loc).toEqual(loc);
      expect(await stored()).toEqual(before);
    }
  });

  it('a field over 4096 bytes before the file part is a 422 and leaves no temp file (the file part was still written to files/tmp-* and never removed)', async () => {
    const before = await stored();
    const form = new FormData();
    form.append('authorship', 'x'.repeat(4097));
    form.append('file', new Blob([new TextEncoder().encode('after a refused field')]), 'firmware.bin');
    const r = await call(relay.baseUrl, 'POST', '/items', { rawBody: form, auth: alice.auth });
    expect(r.status).toBe(422);
    expect((r.body.detail as { loc: unknown }[])[0]!.loc).toEqual(['body', 'authorship']);
    // An upload that completes after it: its temp file was opened later than a leftover one would have been.
    const ok = await upload(new TextEncoder().encode('stored after the refusal'), { title: 'later' });
    expect(ok.status).toBe(201);
    expect(filesDir()).toEqual([...before.files, ok.body.id as string].sort());
  });
});
