import type { IncomingMessage } from 'node:http';
import type { Request, Response } from 'express';
import type { z } from 'zod';

/**
 * One endpoint, described once: express serves it from this description and `openapi.ts`
 * documents it from the same object, so routes and documentation cannot drift apart.
 */
export interface ApiRoute {
  method: 'get' | 'post';
  /** OpenAPI-style path, e.g. `/api/v1/sessions/{sid}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** `bearer`: `authorization: Bearer <agent token>`; `admin`: `x-admin-token`. */
  auth?: 'bearer' | 'admin';
  /** The request body: a form (urlencoded or multipart) or a multipart upload. */
  body?: { kind: 'form' | 'multipart'; schema: z.ZodObject; required: boolean };
  /** The 200 response body. */
  response: z.ZodType;
  /** Error statuses this endpoint can answer, with when. 422 is added for routes with a body. */
  errors: Record<number, string>;
  handler: (req: Request, res: Response) => Promise<unknown>;
  /**
   * For a request sent with `Expect: 100-continue`: throws the `HttpError` the handler would
   * answer from the headers alone (401, 413 from `Content-Length`), so the server refuses before
   * writing `100 Continue` and the client never sends the body. Resolves when the body is welcome.
   */
  beforeContinue?: (req: IncomingMessage) => Promise<void>;
}

/** Express path syntax for an OpenAPI path: `{sid}` becomes `:sid`. */
export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{([a-z_]+)\}/g, ':$1');
}

/** Names of the `{...}` parameters of an OpenAPI path, in order. */
export function pathParams(openApiPath: string): string[] {
  return [...openApiPath.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
}
