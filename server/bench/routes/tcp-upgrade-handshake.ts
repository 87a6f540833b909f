import type { IncomingMessage } from 'node:http';
import { HttpError } from '../../http/http-error.js';

/** A `Sec-WebSocket-Key`: 16 bytes in base64 (RFC 6455, 4.2.1), as `ws` checks it. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * Why `req` is no WebSocket handshake the debug paths can take, as the bench's ordinary answer
 * (`{"detail"}`), or undefined when it is one. Checked before anything else of the upgrade (the
 * debugger's one place on a job is not taken by a request `ws` would then refuse), and so that
 * `ws` does not answer these itself, in text/html.
 */
export function websocketHandshakeRefusal(req: IncomingMessage): HttpError | undefined {
  if (req.method !== 'GET') return new HttpError(405, 'Method Not Allowed', { allow: 'GET' });
  const upgrade = (req.headers.upgrade ?? '').toLowerCase();
  if (upgrade !== 'websocket') return new HttpError(426, 'Not a WebSocket upgrade: send Upgrade: websocket', { upgrade: 'websocket' });
  const version = req.headers['sec-websocket-version'];
  // RFC 6455, 4.4: an unsupported version is answered with the versions the server speaks.
  if (version !== '13' && version !== '8') return new HttpError(426, `Sec-WebSocket-Version ${version === undefined ? 'is missing' : `${JSON.stringify(version)} is not spoken here`}: send 13`, { upgrade: 'websocket', 'sec-websocket-version': '13, 8' });
  const key = req.headers['sec-websocket-key'];
  if (key === undefined || !KEY.test(key.trim())) return new HttpError(400, 'Sec-WebSocket-Key must be 16 bytes in base64 (RFC 6455)');
  return undefined;
}
