import { InvalidArgumentError } from 'commander';
import { backendNames } from '../boards/backend-names.js';
import { DURATION, durationMs } from '../harness/scenario/duration.js';
import { MAX_DATABASE_POOL_SIZE } from '../server/storage/postgres/database-pool-size.js';
import { parsePoolSizeOptions } from '../harness/worker/pool-size.js';
import { MAX_POOL_SIZE } from '../wire/worker/worker-schemas.js';

/**
 * Option parsers and values the command definitions share. Kept light on purpose: `hilbench
 * --help` loads this file and commander, never a service, a simulator or zod (docs/performance.md).
 */

export const backendChoices = ['auto', ...backendNames];

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`expected a positive number, got "${value}"`);
  return n;
}

export function wholeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number 0 or more, got "${value}"`);
  return n;
}

export function requestCount(value: string): number {
  const n = wholeNumber(value);
  if (n < 1) throw new InvalidArgumentError(`expected at least 1 request, got "${value}"`);
  return n;
}

export function connectionCount(value: string): number {
  const n = wholeNumber(value);
  if (n < 1) throw new InvalidArgumentError(`expected at least 1 connection, got "${value}"`);
  return n;
}

export function databasePoolSize(value: string): number {
  const n = wholeNumber(value);
  if (n < 1 || n > MAX_DATABASE_POOL_SIZE) throw new InvalidArgumentError(`expected 1 to ${MAX_DATABASE_POOL_SIZE} connections, got "${value}"`);
  return n;
}

export function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`expected a port 0-65535, got "${value}"`);
  return n;
}

/** An http(s) address with nothing after its path (`--replica-url`), without a trailing slash. */
export function httpUrl(value: string): string {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new InvalidArgumentError(`expected an http:// or https:// address with no path or query, got "${value}"`);
  }
  return url.origin;
}

/** `a, b,c` -> ['a','b','c']; undefined when the option was not given. */
export function commaList(value: unknown): string[] | undefined {
  return typeof value === 'string' ? value.split(',').map((u) => u.trim()).filter(Boolean) : undefined;
}

export const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
export const envName = (s: string) => `HILBENCH_${kebab(s).replace(/-/g, '_').toUpperCase()}`;

/** A duration as scenario files write it (500ms, 1.5s, 2m, 1h; a bare number is milliseconds), parsed by the same rule. */
export function durationOption(value: string): number {
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  if (!DURATION.test(text)) throw new InvalidArgumentError(`expected a duration such as 500ms, 30s, 2m or 1h, got "${value}"`);
  return durationMs(text);
}

/** `--var name=value`, repeatable. */
export function variable(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError(`expected name=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export { packageVersion } from '../lib/package-version.js';

/** Listening on every interface: the listening address is no address a client can use. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '::0', '[::]', '[::0]', '0:0:0:0:0:0:0:0']);

/**
 * What `serve` warns about at start when it listens on a wildcard address without the public URL
 * of a service: llms.txt, /openapi.json's servers and the relay's base_url (which clients sign
 * into registrations) would then advertise `http://0.0.0.0:<port>`.
 */
export function wildcardAddressWarnings(host: string, urls: { publicUrl?: unknown; relayPublicUrl?: unknown; relay: boolean }): string[] {
  if (!WILDCARD_HOSTS.has(host)) return [];
  const warnings: string[] = [];
  const missing = (url: unknown) => typeof url !== 'string' || url === '';
  if (missing(urls.publicUrl)) warnings.push(`--host ${host} without --public-url: the bench advertises http://${host}:<port> in llms.txt, /openapi.json and its pages; set the address clients use`);
  if (urls.relay && missing(urls.relayPublicUrl)) warnings.push(`--host ${host} without --relay-public-url: the relay advertises http://${host}:<port> as its base_url, which clients sign into registrations; set the address clients use`);
  return warnings;
}

/**
 * `--pool-size` (decision 0510), repeatable and comma-separated: `N` for every emulated board or
 * `BOARD=N` for one, each checked now (0 or above the bound stops the command with the value named).
 */
export function poolSizeValues(value: string, previous: string[] = []): string[] {
  const values = value.split(',').map((v) => v.trim()).filter((v) => v !== '');
  try {
    parsePoolSizeOptions(values);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return [...previous, ...values];
}

export const POOL_SIZE_HELP = `instances of each emulated board this worker runs at once: N (every one) or BOARD=N, 1-${MAX_POOL_SIZE}, repeatable (default: the host's cores for sim boards, 1 for mock, QEMU and Renode; docs/lab.md)`;
