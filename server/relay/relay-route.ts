import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Caller } from './credentials.js';
import type { CredentialKind } from './relay-facts.js';

/** Everything a route declares about itself. The same list drives routing, /openapi.json and the docs tables. */
export interface RelayRoute {
  method: 'get' | 'post';
  /** Spec form, `{id}` for path parameters. */
  path: string;
  summary: string;
  auth: CredentialKind;
  /** The first relay version that has the endpoint (the spec's "Available in" columns). */
  since: '0.9.3' | '0.9.19';
  body?: z.ZodType;
  query?: z.ZodType;
  /**
   * `json` (default): the router validates the body with `body`. `core`: JSON parsed but validated
   * by the handler through the protocol core (`body` only documents it). `json-or-multipart`: the
   * handler reads a multipart stream itself or validates JSON itself.
   */
  bodyKind?: 'json' | 'core' | 'json-or-multipart';
  /** Content type of a success answer when not JSON. */
  produces?: string;
  /** Schema of a JSON success answer, for /openapi.json (routes without one document an untyped body). */
  response?: z.ZodType;
  /** Status of a success answer; 200 unless said. */
  successStatus?: number;
  handle(input: RouteInput): unknown;
}

export interface RouteInput {
  caller: Caller;
  body: unknown;
  query: unknown;
  params: Record<string, string>;
  req: Request;
  res: Response;
}

/** Declares a route with typed body and query; the cast is safe because the router parses with the same schemas. */
export function route<B = undefined, Q = undefined>(spec: Omit<RelayRoute, 'handle' | 'body' | 'query'> & {
  body?: z.ZodType<B, unknown>;
  query?: z.ZodType<Q, unknown>;
  handle(input: Omit<RouteInput, 'body' | 'query'> & { body: B; query: Q }): unknown;
}): RelayRoute {
  return spec as unknown as RelayRoute;
}

/** The caller's node id for routes that already required a human or bot credential. */
export function callerNode(caller: Caller): string {
  if (caller.kind === 'anonymous') throw new Error('callerNode used on an anonymous route; the route table and the handler disagree');
  return caller.nodeId;
}

/** Marker for answers the handler already wrote itself (files, PNG, redirects). */
export const alreadySent = Symbol('alreadySent');
