import type { RawRequest } from './raw-http.js';

/**
 * The requests of the issue 9 audit that ended the whole process (bench and relay share it):
 * multipart bodies that end inside a file part, whose stream then emitted an 'error' nobody
 * listened to. Shared by the in-process regression test and the one against `hilbench serve`
 * in a child process (a crash inside a vitest worker would take the worker down instead).
 */
export interface Reproduction {
  name: string;
  service: 'bench' | 'relay';
  request: RawRequest;
  /** What the answer must be (none for a body the client stops sending: the connection is gone). */
  expected?: { status: number; detail: string };
}

const BOUNDARY = 'XyZ';
const type = `multipart/form-data; boundary=${BOUNDARY}`;
const TRUNCATED = { status: 400, detail: 'There was an error parsing the body: Unexpected end of form' };

function exact(body: string, headers: Record<string, string> = {}): Pick<RawRequest, 'headers' | 'body'> {
  return { headers: { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...headers }, body: Buffer.from(body) };
}

/** `credentials`: a bench bearer token and a relay `Authorization` value. */
export function crashReproductions(credentials: { benchToken: string; relayAuth: string }): Reproduction[] {
  const bearer = { Authorization: `Bearer ${credentials.benchToken}` };
  const firmwareCut = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="board"\r\n\r\npico\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="firmware"; filename="a.elf"\r\n\r\n\x7fELF\x01\x01`;
  const firmwareWhole = `${firmwareCut}\r\n--${BOUNDARY}--\r\n`;
  return [
    {
      name: 'register: the body ends inside a file part named "label" (no credential needed)',
      service: 'bench',
      request: { method: 'POST', path: '/api/v1/agents/register', ...exact(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="label"; filename="a.txt"\r\n\r\nabc`) },
      expected: TRUNCATED,
    },
    {
      name: 'flash: the body ends inside the firmware part',
      service: 'bench',
      request: { method: 'POST', path: '/api/v1/jobs/flash', ...exact(firmwareCut, bearer) },
      expected: TRUNCATED,
    },
    {
      name: 'flash: a Content-Length shorter than the body',
      service: 'bench',
      request: { method: 'POST', path: '/api/v1/jobs/flash', headers: { ...bearer, 'Content-Type': type, 'Content-Length': Buffer.byteLength(firmwareCut) }, body: Buffer.from(firmwareWhole) },
    },
    {
      name: 'flash: the client stops sending inside the firmware part',
      service: 'bench',
      request: { method: 'POST', path: '/api/v1/jobs/flash', headers: { ...bearer, 'Content-Type': type, 'Content-Length': Buffer.byteLength(firmwareWhole) }, body: Buffer.from(firmwareCut), ending: 'hang-up' },
    },
    {
      name: 'relay items: the body ends inside a file part not named "file"',
      service: 'relay',
      request: { method: 'POST', path: '/items', ...exact(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="other"; filename="a.txt"\r\n\r\nabc`, { Authorization: credentials.relayAuth }) },
      expected: TRUNCATED,
    },
    {
      name: 'relay items: the body ends inside the file part',
      service: 'relay',
      request: { method: 'POST', path: '/items', ...exact(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc`, { Authorization: credentials.relayAuth }) },
      expected: TRUNCATED,
    },
  ];
}
