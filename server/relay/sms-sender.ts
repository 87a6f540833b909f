import { existsSync, readFileSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { type Clock, isoFromMs, systemClock } from '../../core/clock.js';

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

/** Makes an open file's appended lines durable; `datasync` (fdatasync on the thread pool) by default, injectable in tests. */
export type SyncOutbox = (file: FileHandle) => Promise<void>;

/**
 * The default sender: appends `{"at","to","text"}` lines to `sms-outbox.jsonl` in the data dir,
 * where an operator (`tail -f`) or a test reads them. Nothing leaves the machine. A send resolves
 * once its line is on disk: the relay then answers that the code was sent, and a power cut must
 * not take back a code someone was told to expect (the line is one `O_APPEND` write, so
 * concurrent sends never interleave).
 */
export class FileOutboxSmsSender implements SmsSender {
  readonly path: string;
  constructor(
    dataDir: string,
    private readonly clock: Clock,
    private readonly syncOutbox: SyncOutbox = (file) => file.datasync(),
  ) {
    this.path = join(dataDir, smsOutboxFileName);
  }

  async send(message: SmsMessage): Promise<void> {
    const file = await open(this.path, 'a', 0o600);
    try {
      await file.appendFile(JSON.stringify({ at: isoFromMs(this.clock.nowMs()), to: message.to, text: message.text }) + '\n');
      await this.syncOutbox(file);
    } finally {
      await file.close();
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
