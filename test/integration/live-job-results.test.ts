import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer, flash } from './bench-job-requests.js';
import { ClockedUartBackend, clockedTranscript } from './clocked-uart-backend.js';
import { picoTestElf } from '../support/make-elf.js';

/**
 * Results as they happen (issue 11, "For machines"): a job read that waits for the end, the UART
 * as Server-Sent Events from the first byte and resumable, and serial input to a running job.
 * The clocked board prints `line k` every 100 ms of the fake clock.
 */

let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function runningJob(uartSeconds: string) {
  app = await startBenchTestApp({ backends: ({ clock }) => ({ mock: new ClockedUartBackend(clock) }) });
  const { token } = await app.register('alice');
  const res = await flash(app, token, { board: 'pico', uart_seconds: uartSeconds }, picoTestElf());
  expect(res.status).toBe(200);
  const { job_id: jobId } = (await res.json()) as { job_id: string };
  await app.jobReaches(jobId, 'running');
  return { app, token, jobId };
}

/** Reads SSE events from a fetch response until `until` says stop (or the stream ends). */
async function readEvents(res: Response, until: (events: Array<{ event: string; id?: string; data: string }>) => boolean) {
  const events: Array<{ event: string; id?: string; data: string }> = [];
  const reader = res.body!.getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += new TextDecoder().decode(value);
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (block.startsWith(':')) continue;
      const fields = Object.fromEntries(block.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
      events.push({ event: fields.event ?? 'message', id: fields.id, data: fields.data ?? '' });
    }
    if (until(events)) break;
  }
  await reader.cancel().catch(() => undefined);
  return events;
}

describe('GET /api/v1/jobs/{job_id}?wait=', () => {
  it('answers as soon as the job ends, or with the job as it is when the wait runs out', async () => {
    const { app, token, jobId } = await runningJob('1');
    const short = app.request(`/api/v1/jobs/${jobId}?wait=0.5`, { headers: bearer(token) });
    await app.fake.tickAsync(500);
    expect(await (await short).json()).toMatchObject({ state: 'running' });
    const long = app.request(`/api/v1/jobs/${jobId}?wait=60`, { headers: bearer(token) });
    for (let i = 0; i < 6; i++) await app.fake.tickAsync(100);
    const done = (await (await long).json()) as { state: string; uart: { text: string } };
    expect(done.state).toBe('done');
    expect(done.uart.text).toBe(clockedTranscript(10));
  });

  it('refuses a wait outside 0 < wait <= 60 with a 422 on the query', async () => {
    const { app, token, jobId } = await runningJob('1');
    for (const wait of ['0', '61', 'soon']) {
      const res = await app.request(`/api/v1/jobs/${jobId}?wait=${wait}`, { headers: bearer(token) });
      expect(res.status, wait).toBe(422);
      expect(((await res.json()) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(['query', 'wait']);
    }
  });

  it('reads wait as numeric text like a form field: pydantic\'s errors, and the last of a repeated value', async () => {
    const { app, token, jobId } = await runningJob('0.1');
    for (let i = 0; i < 3; i++) await app.fake.tickAsync(100);
    await app.jobReaches(jobId, 'done');
    const detailOf = async (query: string) => {
      const res = await app.request(`/api/v1/jobs/${jobId}?${query}`, { headers: bearer(token) });
      expect(res.status, query).toBe(422);
      return ((await res.json()) as { detail: unknown[] }).detail;
    };
    const floatParsing = (input: string) => [{ type: 'float_parsing', loc: ['query', 'wait'], msg: 'Input should be a valid number, unable to parse string as a number', input }];
    expect(await detailOf('wait=')).toEqual(floatParsing(''));
    expect(await detailOf('wait=soon')).toEqual(floatParsing('soon'));
    expect(await detailOf('wait=nan')).toEqual([{ type: 'finite_number', loc: ['query', 'wait'], msg: 'Input should be a finite number', input: 'nan' }]);
    expect(await detailOf('wait=5&wait=0')).toEqual([{ type: 'greater_than', loc: ['query', 'wait'], msg: 'Input should be greater than 0', input: '0', ctx: { gt: 0 } }]);
    for (const query of ['wait=1_0', 'wait=%201e1%20', 'wait=0&wait=5']) {
      const res = await app.request(`/api/v1/jobs/${jobId}?${query}`, { headers: bearer(token) });
      expect(res.status, query).toBe(200);
      expect(((await res.json()) as { state: string }).state).toBe('done');
    }
  });
});

describe('GET /api/v1/jobs/{job_id}/uart (Server-Sent Events)', () => {
  it('streams every chunk from the first byte (also to a late client), then an end event with the job; resumes from Last-Event-ID', async () => {
    const { app, token, jobId } = await runningJob('0.5');
    await app.fake.tickAsync(250); // two lines printed before the client connects
    const res = await app.request(`/api/v1/jobs/${jobId}/uart`, { headers: bearer(token) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reading = readEvents(res, (events) => events.some((e) => e.event === 'end'));
    for (let i = 0; i < 4; i++) await app.fake.tickAsync(100);
    const events = await reading;
    const uart = events.filter((e) => e.event === 'uart').map((e) => ({ id: e.id, ...(JSON.parse(e.data) as { offset: number; text: string; at_ns: number; time_base: string }) }));
    expect(uart.map((u) => u.text).join('')).toBe(clockedTranscript(5));
    expect(uart[0]).toMatchObject({ offset: 0, text: 'line 1\r\n', at_ns: 100_000_000, time_base: 'wall' });
    for (const u of uart) expect(Number(u.id)).toBe(u.offset + Buffer.byteLength(u.text));
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ job_id: jobId, state: 'done' });

    // Resuming after the third line gets only the rest, then the end at once.
    const resumed = await readEvents(await app.request(`/api/v1/jobs/${jobId}/uart`, { headers: { ...bearer(token), 'last-event-id': uart[2]!.id! } }), (e) =>
      e.some((x) => x.event === 'end'),
    );
    expect(resumed.filter((e) => e.event === 'uart').map((e) => (JSON.parse(e.data) as { text: string }).text).join('')).toBe('line 4\r\nline 5\r\n');

    // Only decimal digits are an id the stream gave: anything else names no place in it and is read
    // as no Last-Event-ID (the whole stream, never bytes skipped); Number() read 0x18 as 24, 2.4e1 as 24.
    // (` 24` is 24: the blanks around a header value are not part of it, RFC 9110 section 5.5.)
    const offset = uart[2]!.id!;
    expect(offset).toBe('24');
    for (const id of ['0x18', '2.4e1', '+24', '24.0', '-24', '9007199254740993', '24, 24', '']) {
      const whole = await readEvents(await app.request(`/api/v1/jobs/${jobId}/uart`, { headers: { ...bearer(token), 'last-event-id': id } }), (e) => e.some((x) => x.event === 'end'));
      expect([id, whole.filter((e) => e.event === 'uart').map((e) => (JSON.parse(e.data) as { text: string }).text).join('')]).toEqual([id, clockedTranscript(5)]);
    }
  });

  it('answers 404 for another agent’s job, before any stream opens', async () => {
    const { app, jobId } = await runningJob('0.5');
    const bob = await app.register('bob');
    const res = await app.request(`/api/v1/jobs/${jobId}/uart`, { headers: bearer(bob.token) });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: `job ${jobId} not found` });
  });
});

describe('POST /api/v1/jobs/{job_id}/uart', () => {
  it('writes to the running firmware’s serial input (the clocked board echoes it), and answers 409 once the job ended', async () => {
    const { app, token, jobId } = await runningJob('0.3');
    const post = (body: unknown) =>
      app.request(`/api/v1/jobs/${jobId}/uart`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const written = await post({ text: 'ping\n' });
    expect(written.status, await written.clone().text()).toBe(200);
    expect(await written.json()).toEqual({ job_id: jobId, accepted_bytes: 5, input_seq: 1, delivery: 'written', written_bytes: 5 });
    const both = await post({ text: 'a', base64: 'Yg==' });
    expect(both.status).toBe(422);
    // pydantic's words for a model validator's ValueError, located on the body.
    expect(await both.json()).toEqual({
      detail: [{ type: 'value_error', loc: ['body'], msg: 'Value error, send exactly one of text or base64', input: { text: 'a', base64: 'Yg==' }, ctx: { error: {} } }],
    });
    // 4096 characters of a 3-byte character are 12 288 bytes: refused on the field, not a 500.
    const tooMany = await post({ text: '€'.repeat(4096) });
    expect(tooMany.status).toBe(422);
    expect(((await tooMany.json()) as { detail: Array<{ loc: unknown[]; msg: string }> }).detail[0]).toMatchObject({
      loc: ['body', 'text'],
      msg: 'Value error, the input is 12288 bytes; at most 4096 bytes per request',
    });
    for (let i = 0; i < 3; i++) await app.fake.tickAsync(100);
    await app.jobReaches(jobId, 'done');
    const job = (await (await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(token) })).json()) as { uart: { text: string } };
    expect(job.uart.text).toBe('ping\nline 1\r\nline 2\r\nline 3\r\n');
    const late = await post({ base64: Buffer.from('x').toString('base64') });
    expect(late.status).toBe(409);
    expect(await late.json()).toEqual({ detail: `job ${jobId} is done, not running: serial input reaches a running job only` });
  });

  it('refuses input that is not bytes it could write as sent (no bytes, base64 that is not, a lone surrogate) with 422, queueing nothing', async () => {
    const { app, token, jobId } = await runningJob('0.3');
    const post = (raw: string) => app.request(`/api/v1/jobs/${jobId}/uart`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: raw });
    const refusals: Array<[string, unknown[]]> = [
      ['{"text": ""}', ['body', 'text']],
      ['{"base64": ""}', ['body', 'base64']],
      ['{"base64": "!!!!"}', ['body', 'base64']],
      ['{"base64": "YQ==!!"}', ['body', 'base64']],
      ['{"base64": "Y Q=="}', ['body', 'base64']],
      ['{"text": "a\\ud800"}', ['body', 'text']],
      ['{"text": "\\udc00b"}', ['body', 'text']],
    ];
    for (const [raw, loc] of refusals) {
      const refused = await post(raw);
      expect(refused.status, raw).toBe(422);
      const [item] = ((await refused.json()) as { detail: Array<{ loc: unknown[]; type: string; msg: string; ctx?: unknown }> }).detail;
      expect(item!.loc, raw).toEqual(loc);
      // A validator's ValueError, as pydantic reports it: the message prefixed and an (empty) error in ctx.
      if (item!.type === 'value_error') expect([item!.msg.startsWith('Value error, '), item!.ctx], raw).toEqual([true, { error: {} }]);
    }
    // Nothing was queued: the first accepted input is number 1, and only its bytes reach the device.
    const written = await post(JSON.stringify({ base64: Buffer.from('ok\u0000\n').toString('base64') }));
    expect(await written.json()).toMatchObject({ input_seq: 1, accepted_bytes: 4 });
    const emoji = await post(JSON.stringify({ text: '\u{1F600}' }));
    expect(await emoji.json()).toMatchObject({ input_seq: 2, accepted_bytes: 4 });
    for (let i = 0; i < 3; i++) await app.fake.tickAsync(100);
    await app.jobReaches(jobId, 'done');
    const job = (await (await app.request(`/api/v1/jobs/${jobId}`, { headers: bearer(token) })).json()) as { uart: { base64: string } };
    expect(Buffer.from(job.uart.base64, 'base64').toString('utf8')).toBe('ok\u0000\n\u{1F600}line 1\r\nline 2\r\nline 3\r\n');
  });
});
