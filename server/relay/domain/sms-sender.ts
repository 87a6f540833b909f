import { closeSync, existsSync, fdatasync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { type Clock, isoFromMs, systemClock } from '../../../core/clock.js';

/** One text message to one E.164 number. */
export interface SmsMessage {
  to: string;
  text: string;
}

/** Something that can deliver a text message. Throws when delivery failed. */
export interface SmsSender {
  send(message: SmsMessage): Promise<void>;
}

/** Name of the outbox file the default sender appends to, one JSON object per line. */
export const smsOutboxFileName = 'sms-outbox.jsonl';

/** Makes an open file's written lines durable (by descriptor); fdatasync on the thread pool by default, injectable in tests. */
export type SyncOutbox = (fd: number) => Promise<void>;

const fdatasyncOnThreadPool: SyncOutbox = (fd) => new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

/**
 * The default sender: appends `{"at","to","text"}` lines to `sms-outbox.jsonl` in the data dir,
 * where an operator (`tail -f`) or a test reads them. Nothing leaves the machine. The line is
 * written at once, in the call (one `O_APPEND` write, so concurrent sends never interleave, and a
 * reader sees it as soon as the relay has answered, even where the relay answers before the send
 * settles); the send resolves once it is on disk, so where the relay waits for the send
 * (`POST /me/phone`), a power cut cannot take back a code someone was told to expect.
 */
export class FileOutboxSmsSender implements SmsSender {
  readonly path: string;
  constructor(
    dataDir: string,
    private readonly clock: Clock,
    private readonly syncOutbox: SyncOutbox = fdatasyncOnThreadPool,
  ) {
    this.path = join(dataDir, smsOutboxFileName);
  }

  async send(message: SmsMessage): Promise<void> {
    const fd = openSync(this.path, 'a', 0o600);
    try {
      writeSync(fd, JSON.stringify({ at: isoFromMs(this.clock.nowMs()), to: message.to, text: message.text }) + '\n');
      await this.syncOutbox(fd);
    } finally {
      closeSync(fd);
    }
  }
}

/** Reads the outbox written by `FileOutboxSmsSender`; oldest first. */
export function readSmsOutbox(dataDir: string): { at: string; to: string; text: string }[] {
  const path = join(dataDir, smsOutboxFileName);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { at: string; to: string; text: string });
}

export interface WebhookSmsSenderOptions {
  /** The gateway endpoint; receives POST `{"to": "+...", "text": "..."}` as JSON. */
  url: string;
  /** Injected fetch (tests pass msw-intercepted fetch); defaults to the global one. */
  fetch?: typeof fetch;
  /** Extra headers, e.g. the gateway's API key. */
  headers?: Record<string, string>;
  /** Bound on one delivery attempt. */
  timeoutMs?: number;
  /** Clock that bounds the attempt; the host clock by default. */
  clock?: Clock;
}

/**
 * Sends through an HTTP webhook (most SMS gateways accept a JSON POST). A non-2xx answer or a
 * timeout throws with the status and the start of the gateway's answer, so the relay can log why.
 */
export class WebhookSmsSender implements SmsSender {
  private readonly fetchFn: typeof fetch;
  constructor(private readonly options: WebhookSmsSenderOptions) {
    this.fetchFn = options.fetch ?? fetch;
  }

  async send(message: SmsMessage): Promise<void> {
    const timeoutMs = this.options.timeoutMs ?? 10_000;
    const clock = this.options.clock ?? systemClock;
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    let response: Response;
    try {
      response = await this.fetchFn(this.options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.options.headers },
        body: JSON.stringify({ to: message.to, text: message.text }),
        signal: abort.signal,
      });
    } catch (cause) {
      throw new Error(`SMS webhook ${this.options.url} unreachable or slower than ${timeoutMs} ms`, { cause });
    } finally {
      clock.clearTimeout(timer);
    }
    if (!response.ok) {
      const text = (await response.text().catch(() => '')).slice(0, 200);
      throw new Error(`SMS webhook ${this.options.url} answered ${response.status}: ${text}`);
    }
  }
}
