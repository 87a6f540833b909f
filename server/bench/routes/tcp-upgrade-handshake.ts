import type { IncomingMessage } from 'node:http';
import { DEBUG_UPGRADE_PROTOCOL } from '../../../wire/worker/debug-schemas.js';
import { HttpError } from '../../http/http-error.js';

/** What a plain GET of a debug path, or an upgrade to another protocol, is told: the stream is raw bytes on `Upgrade: tcp` (docs/bench-api.md, "Debugging"). */
export const NOT_A_TCP_UPGRADE = 'a debug stream is raw bytes on an HTTP upgrade: ask for it with "Connection: Upgrade" and "Upgrade: tcp" (docs/bench-api.md, "Debugging")';

/**
 * Why `req` is no upgrade the debug paths take (decision 0910), as the bench's ordinary answer
 * (`{"detail"}`), or undefined when it is one: a GET asking for `Upgrade: tcp`. Checked before
 * anything else of the upgrade, so a request that would then be refused does not take the
 * debugger's one place on a job. A WebSocket upgrade is refused as any other protocol is: 426,
 * naming `tcp` (RFC 9110 section 15.5.22).
 */
export function tcpUpgradeRefusal(req: IncomingMessage): HttpError | undefined {
  if (req.method !== 'GET') return new HttpError(405, 'Method Not Allowed', { allow: 'GET' });
  const protocols = (req.headers.upgrade ?? '').split(',').map((protocol) => protocol.trim().toLowerCase());
  if (!protocols.includes(DEBUG_UPGRADE_PROTOCOL)) return new HttpError(426, NOT_A_TCP_UPGRADE, { upgrade: DEBUG_UPGRADE_PROTOCOL, connection: 'Upgrade, close' });
  return undefined;
}
