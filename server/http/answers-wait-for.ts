import type { RequestHandler, Response } from 'express';

/**
 * Holds the end of every answer until `ready()` settles (null: answer at once). The relay uses it
 * so that nothing it committed is told to anyone, success or read, before the commit is on disk
 * (decision 0480): its commits are synced off the event loop, and an answer waits for the sync.
 * It wraps `res.end`, the one call every answer ends with (JSON, errors, files, redirects), as
 * compression middleware does, so no route can forget it.
 *
 * When `ready()` rejects, an answer whose head is not yet written becomes a 503 with the reason;
 * one already streaming is cut, so the client never takes it for a whole answer.
 */
export function answersWaitFor(ready: () => Promise<void> | null, onFailure: (error: unknown) => void): RequestHandler {
  return (_req, res, next) => {
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      const wait = ready();
      if (wait === null) return end(...args);
      wait.then(
        () => end(...args),
        (error: unknown) => {
          onFailure(error);
          refuse(res, end, error);
        },
      );
      return res;
    }) as Response['end'];
    next();
  };
}

function refuse(res: Response, end: (...args: unknown[]) => Response, error: unknown): void {
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
