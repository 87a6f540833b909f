import type { RequestHandler, Response } from 'express';

type Call = (...args: unknown[]) => unknown;

/**
 * Holds every answer until `ready()` settles (null: answer at once). The relay uses it so that
 * nothing it committed is told to anyone, success or read, before the commit is on disk
 * (decision 0480): its commits are synced off the event loop, and an answer waits for the sync.
 * It wraps `res.end`, the one call every answer ends with (JSON, errors, redirects), and
 * `res.write`, with which a streamed answer (a file's bytes) sends its head and, with a
 * Content-Length, all a client needs before `end`; as compression middleware does, so no route
 * can forget it. A stream waits once, at its first write, and again at its end.
 *
 * When `ready()` rejects, an answer whose head is not yet written becomes a 503 with the reason;
 * one already streaming is cut, so the client never takes it for a whole answer. Once `failure()`
 * names the reason, every request is a 503 before it reaches a handler.
 */
export interface AnswersWaitForOptions {
  /** Settles when what the answer may show is durable; null when it already is. */
  ready: () => Promise<void> | null;
  /** The failure that makes `ready` reject for good, once known; null before. */
  failure: () => Error | null;
  /** Told of each refusal (the relay logs the first). */
  onFailure: (error: unknown) => void;
}

export function answersWaitFor({ ready, failure, onFailure }: AnswersWaitForOptions): RequestHandler {
  return (_req, res, next) => {
    const end = res.end.bind(res) as Call;
    // Refused before any handler runs: a request answered 503 must have changed nothing (once the
    // disk failed, what it committed could still reach the disk and outlive the 503).
    const failed = failure();
    if (failed) {
      onFailure(failed);
      refuse(res, end, failed);
      return;
    }
    const write = res.write.bind(res) as Call;
    // Writes and the end held behind the disk, in order; null when nothing is held.
    let held: Promise<void> | null = null;
    let waitedAtFirstWrite = false;
    let refused = false;
    /** Runs `send` once `wait` and whatever was held before it settle; a failure refuses the answer. */
    const after = (wait: Promise<void>, send: () => unknown) => {
      const previous = held;
      const mine: Promise<void> = (previous ? previous.then(() => wait) : wait).then(
        () => {
          if (refused) return;
          const flowing = send();
          if (held !== mine) return;
          held = null;
          // A stream paused on our `write` returning false goes on (when the socket took the bytes;
          // otherwise the response emits 'drain' itself once it has).
          if (flowing === true) res.emit('drain');
        },
        (error: unknown) => {
          if (held === mine) held = null;
          if (refused) return;
          refused = true;
          onFailure(error);
          refuse(res, end, error);
        },
      );
      held = mine;
    };
    res.write = ((...args: unknown[]) => {
      if (refused) return false;
      if (!waitedAtFirstWrite) {
        // The head goes out with the first write: it waits for what was committed before it.
        waitedAtFirstWrite = true;
        const wait = ready();
        if (wait) {
          after(wait, () => write(...args));
          return false;
        }
      }
      if (!held) return write(...args);
      after(Promise.resolve(), () => write(...args));
      return false;
    }) as Response['write'];
    res.end = ((...args: unknown[]) => {
      if (refused) return res;
      const wait = ready();
      if (wait === null && !held) return end(...args);
      after(wait ?? Promise.resolve(), () => end(...args));
      return res;
    }) as Response['end'];
    next();
  };
}

function refuse(res: Response, end: Call, error: unknown): void {
  if (res.headersSent) {
    res.destroy(error instanceof Error ? error : new Error(String(error)));
    return;
  }
  // Headers of the answer that is not sent; others (security headers, request id) stay.
  for (const name of ['content-length', 'content-type', 'content-disposition', 'content-encoding', 'etag', 'last-modified', 'location']) res.removeHeader(name);
  res.statusCode = 503;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  end(JSON.stringify({ detail: error instanceof Error ? error.message : String(error) }));
}
