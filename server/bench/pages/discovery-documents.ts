import { mcpExample } from './home-page.js';
import { MAX_SESSION_WAIT_SECONDS } from '../bench-schemas.js';
import { MAX_JOB_WAIT_SECONDS } from '../job-live-routes.js';
/**
 * The machine-discovery documents: `/llms.txt` (llmstxt.org format), `/robots.txt` (RFC 9309) and
 * `/.well-known/ai-plugin.json` (the plugin manifest, schema v1). All absolute links are built from
 * the configured public base URL, so they are right behind a proxy.
 */

/** The interface version of the bench service spec these documents describe. */
export const INTERFACE_VERSION = '0.3.4';

/** `/llms.txt`: H1, a summary quote, the auth flow, then link lists (llmstxt.org). */
export function renderLlmsTxt(publicBaseUrl: string, options: { mcp?: boolean } = {}): string {
  const u = (path: string) => `${publicBaseUrl}${path}`;
  const mcp = options.mcp
    ? `
## MCP

- [MCP endpoint](${u('/mcp')}): the bench as Model Context Protocol tools (list_boards, run_firmware, open_session, heartbeat_session, end_session, get_job, stream_job_uart) over streamable HTTP; send \`Authorization: Bearer <token>\` with the token from registration. A client configuration:

\`\`\`json
${mcpExample(publicBaseUrl)}
\`\`\`
`
    : '';
  return `# hilbench

> hilbench is a hardware-in-the-loop bench for software agents: send an ELF firmware image and a board name over HTTP, the bench flashes it onto that microcontroller board (simulator, emulator or real hardware), runs it and returns the UART output. Bench service interface ${INTERFACE_VERSION}; machine endpoints live under ${u('/api/v1')} and answer JSON.

Conventions:

- Requests are forms: \`application/x-www-form-urlencoded\`, except the flash job which is \`multipart/form-data\`. All form values are strings.
- Errors are \`{"detail": "<message>"}\`. Invalid input is 422 with \`{"detail": [{"type", "loc", "msg", "input"}]}\`, one entry per failing field.
- Authenticate with the header \`authorization: Bearer <token>\`; the token comes from registration and is shown once.

Auth and work flow:

1. \`POST /api/v1/agents/register\` (form: \`label\`, default "agent") returns \`token\`.
2. \`GET /api/v1/boards\` lists boards and whether each is free, leased, busy or offline.
3. \`POST /api/v1/sessions\` (form: \`board\`, \`idle_seconds\` default "90") opens an exclusive lease and returns \`session_id\`. A board someone else holds is 409 with \`Retry-After\`; \`wait_seconds\` (up to ${MAX_SESSION_WAIT_SECONDS}) waits in the board's queue instead.
4. \`POST /api/v1/jobs/flash\` (multipart: \`board\`, \`firmware\` = the ELF file, \`uart_seconds\` default "0.8", \`session\`) returns a job in state \`queued\`.
5. \`GET /api/v1/jobs/{job_id}?wait=${MAX_JOB_WAIT_SECONDS}\` answers as soon as \`state\` is \`done\` or \`failed\` (else after ${MAX_JOB_WAIT_SECONDS} s: ask again); the UART capture is in \`uart\`. \`GET /api/v1/jobs/{job_id}/uart\` streams it live (Server-Sent Events).
6. \`POST /api/v1/sessions/{sid}/heartbeat\` before \`idle_seconds\` pass keeps the lease; \`POST /api/v1/sessions/{sid}/end\` frees the board.

## API

- [OpenAPI document](${u('/openapi.json')}): every endpoint with request and response schemas; read this first
- [List boards](${u('/api/v1/boards')}): GET; boards, MCU, backend, live status
- [Register an agent](${u('/api/v1/agents/register')}): POST form \`label\`; returns the bearer token
- [Open a session](${u('/api/v1/sessions')}): POST form \`board\`, \`idle_seconds\`; bearer token required
- [Session status, heartbeat, end](${u('/api/v1/sessions/{sid}')}): GET; POST \`/heartbeat\` and \`/end\` with no body
- [Flash firmware](${u('/api/v1/jobs/flash')}): POST multipart \`board\`, \`firmware\`, \`uart_seconds\`, \`session\`
- [Job status](${u('/api/v1/jobs/{job_id}')}): GET, \`?wait=<seconds>\` (at most ${MAX_JOB_WAIT_SECONDS}) to answer once it ended; state, ELF summary, UART capture, failure reason
- [Health](${u('/api/v1/health')}): GET; service and board availability
- [Statistics](${u('/api/v1/stats')}): GET; totals, jobs by state, recent activity

## Optional

- [Bench status page](${u('/')}): the human page, with curl examples of the whole flow
- [Statistics page](${u('/stats')}): the same numbers as HTML
- [Plugin manifest](${u('/.well-known/ai-plugin.json')}): ai-plugin.json pointing at the OpenAPI document
- [Waitlist](${u('/#waitlist')}): POST ${u('/api/v1/waitlist')} with form \`kind\` (person, team or agent), \`email\`, \`note\` and \`csrf\` taken from the form on the status page
${mcp}`;
}

/** `/robots.txt`: pages and discovery files for everyone; the API and admin are not for crawlers. */
export function renderRobotsTxt(publicBaseUrl: string): string {
  return `# hilbench bench service
# Pages and discovery documents are public. The API needs agent tokens and /admin an operator token:
# neither is useful to a crawler.
# Language models: see ${publicBaseUrl}/llms.txt (and ${publicBaseUrl}/openapi.json).

User-agent: *
Allow: /
Disallow: /api/
Disallow: /admin
`;
}

export interface AiPluginManifest {
  schema_version: 'v1';
  name_for_human: string;
  name_for_model: string;
  description_for_human: string;
  description_for_model: string;
  auth: { type: 'user_http'; authorization_type: 'bearer' };
  api: { type: 'openapi'; url: string };
  logo_url: string;
  contact_email: string;
  legal_info_url: string;
}

/** `/.well-known/ai-plugin.json`. `contactEmail` is the operator's address. */
export function aiPluginManifest(publicBaseUrl: string, contactEmail: string): AiPluginManifest {
  return {
    schema_version: 'v1',
    name_for_human: 'hilbench',
    name_for_model: 'hilbench',
    // At most 100 characters, as the manifest format asks.
    description_for_human: 'Flash ELF firmware onto remote microcontroller boards and read back their UART output.',
    description_for_model:
      'Runs firmware on microcontroller boards (simulated, emulated or real) and returns what the firmware printed on its UART. ' +
      'Flow: register an agent once (POST /api/v1/agents/register, form field label) and keep the returned token; send it as ' +
      '"authorization: Bearer <token>". List boards with GET /api/v1/boards and pick one whose status is free. Open a session ' +
      '(POST /api/v1/sessions, form fields board and idle_seconds) to lease the board exclusively, and send ' +
      'POST /api/v1/sessions/{sid}/heartbeat before idle_seconds pass. Upload an ELF built for that board\'s MCU with ' +
      `POST /api/v1/jobs/flash (multipart: board, firmware, uart_seconds, session); GET /api/v1/jobs/{job_id}?wait=${MAX_JOB_WAIT_SECONDS} answers ` +
      `once state is done or failed (else after ${MAX_JOB_WAIT_SECONDS} s: ask again), then read uart.text, or failure.message when it failed. End the session with ` +
      'POST /api/v1/sessions/{sid}/end. Errors are {"detail": ...}; 409 means the board is held by someone else (the detail ' +
      'says until when), 422 lists each invalid field. Never send secrets in labels; labels are public.',
    auth: { type: 'user_http', authorization_type: 'bearer' },
    api: { type: 'openapi', url: `${publicBaseUrl}/openapi.json` },
    logo_url: `${publicBaseUrl}/logo.png`,
    contact_email: contactEmail,
    legal_info_url: `${publicBaseUrl}/#legal`,
  };
}
