import { mcpExample } from './home-page.js';
import { MAX_SESSION_WAIT_SECONDS } from '../../../wire/bench/bench-schemas.js';
import { MAX_JOB_WAIT_SECONDS } from '../../../wire/bench/job-request-schemas.js';
/**
 * The machine-discovery documents: `/llms.txt` (llmstxt.org format), `/robots.txt` (RFC 9309) and
 * `/.well-known/ai-plugin.json` (the plugin manifest, schema v1). All absolute links are built from
 * the configured public base URL, so they are right behind a proxy.
 */

/** The interface version of the bench service spec these documents describe. */
export const INTERFACE_VERSION = '0.3.4';

/** `/llms.txt`: H1, a summary quote, the auth flow, then link lists (llmstxt.org). */
export function renderLlmsTxt(publicBaseUrl: string, options: { mcp?: boolean; waitlist?: boolean } = {}): string {
  const u = (path: string) => `${publicBaseUrl}${path}`;
  const mcp = options.mcp
    ? `
## MCP

- [MCP endpoint](${u('/mcp')}): the bench as Model Context Protocol tools (list_boards, run_firmware, open_session, heartbeat_session, end_session, get_job, stream_job_uart, cancel_job) over streamable HTTP; send \`Authorization: Bearer <token>\` with the token from registration. \`run_firmware\` with \`expect_text\` is a whole run in one call (it frees the board as soon as the text shows); UART comes back as text, its head and tail when long (\`uart_cut_chars\` says how much was cut, \`max_chars\` asks for more). A client configuration:

\`\`\`json
${mcpExample(publicBaseUrl)}
\`\`\`
`
    : '';
  const waitlist =
    options.waitlist === false
      ? ''
      : `- [Waitlist](${u('/#waitlist')}): this bench operator's list of who wants more boards here; POST ${u('/api/v1/waitlist')} with form \`kind\` (person, team or agent), \`email\`, \`note\` and \`csrf\` taken from the form on the status page\n`;
  return `# hilbench

> hilbench is a hardware-in-the-loop bench for software agents: send an ELF firmware image and a board name over HTTP, the bench flashes it onto that microcontroller board (simulator, emulator or real hardware), runs it and returns the UART output. Bench service interface ${INTERFACE_VERSION}; machine endpoints live under ${u('/api/v1')} and answer JSON.

Shortest flow: three requests, no session needed.

1. \`POST ${u('/api/v1/agents/register')}\` (form: \`label\`, default "agent") returns \`token\`, shown once. Send \`authorization: Bearer <token>\` on every request after it.
2. \`POST ${u('/api/v1/jobs/flash')}\` (multipart: \`board\`, \`firmware\` = the ELF file; optional \`uart_seconds\`, default "0.8") returns \`job_id\`. \`session\` is optional: without it the job takes the board for its own run. No ELF of your own? \`GET ${u('/examples/{board}/hello.elf')}\` is this bench's example firmware for a board (e.g. ${u('/examples/pico/hello.elf')}: it prints \`hilbench hello board=pico\`, then \`tick 1\`, \`tick 2\`, ... every 100 ms).
3. \`GET ${u('/api/v1/jobs/{job_id}')}?wait=${MAX_JOB_WAIT_SECONDS}&uart=text\` answers once \`state\` is \`done\` or \`failed\` (else after ${MAX_JOB_WAIT_SECONDS} s: ask again); \`uart.text\` is what the firmware printed, \`failure.message\` why it failed. \`&max_chars=4000\` keeps the head and tail of the text (\`uart.cut_chars\` says how much was cut); without \`uart=text\` the answer also carries the bytes as \`base64\` and timed \`chunks\`.

A busy board is 409 with \`Retry-After\`, the expected wait. Once you have your answer before the capture ends, \`POST /api/v1/jobs/{job_id}/cancel\` stops the job and frees the board at once (it ends \`failed\`, kind \`cancelled\`, keeping its UART).

Conventions:

- Requests are forms: \`application/x-www-form-urlencoded\`, except the flash job which is \`multipart/form-data\`. All form values are strings.
- Errors are \`{"detail": "<message>"}\`. Invalid input is 422 with \`{"detail": [{"type", "loc", "msg", "input"}]}\`, one entry per failing field.
- Authenticate with the header \`authorization: Bearer <token>\`; the token comes from registration and is shown once.

Sessions, for several jobs in a row on one board that nobody else takes in between:

1. \`GET /api/v1/boards\` lists boards and whether each is free, leased, busy or offline.
2. \`POST /api/v1/sessions\` (form: \`board\`, \`idle_seconds\` default "90") opens an exclusive lease and returns \`session_id\`. A board someone else holds is 409 with \`Retry-After\`; \`wait_seconds\` (up to ${MAX_SESSION_WAIT_SECONDS}) waits in the board's queue instead (\`GET /api/v1/boards/{board}/queue\` says your place).
3. \`POST /api/v1/jobs/flash\` with \`session\` runs under that lease; read each job as above. \`GET /api/v1/jobs/{job_id}/uart\` streams its UART live (Server-Sent Events).
4. \`POST /api/v1/sessions/{sid}/heartbeat\` before \`idle_seconds\` pass keeps the lease; \`POST /api/v1/sessions/{sid}/end\` frees the board.

## API

- [OpenAPI document](${u('/openapi.json')}): every endpoint with request and response schemas
- [Health](${u('/api/v1/health')}): GET; \`{"status": "ok"}\` once the service is up (degraded: no board can run)
- [List boards](${u('/api/v1/boards')}): GET; boards, MCU, backend, live status
- [Example firmware](${u('/examples/pico/hello.elf')}): GET \`/examples/{board}/hello.elf\`, each board's hello-world ELF
- [Register an agent](${u('/api/v1/agents/register')}): POST form \`label\`; returns the bearer token
- [Flash firmware](${u('/api/v1/jobs/flash')}): POST multipart \`board\`, \`firmware\`, \`uart_seconds\`, \`session\` (optional)
- [Job status](${u('/api/v1/jobs/{job_id}')}): GET, \`?wait=<seconds>\` (at most ${MAX_JOB_WAIT_SECONDS}) to answer once it ended, \`&uart=text\` and \`&max_chars=<n>\` for less; state, ELF summary, UART capture, failure reason
- [Cancel a job](${u('/api/v1/jobs/{job_id}/cancel')}): POST, optional form \`reason\`; stops it and frees its board; a finished job is answered as it is
- [Open a session](${u('/api/v1/sessions')}): POST form \`board\`, \`idle_seconds\`, \`wait_seconds\`; bearer token required
- [Session status, heartbeat, end](${u('/api/v1/sessions/{sid}')}): GET; POST \`/heartbeat\` and \`/end\` with no body
- [Board queue](${u('/api/v1/boards/{board}/queue')}): GET; how many wait for the board, and your place
- [Statistics](${u('/api/v1/stats')}): GET; totals, jobs by state, recent activity

## Optional

- [Bench status page](${u('/')}): the human page, with the quick start and curl examples of the whole flow
- [Statistics page](${u('/stats')}): the same numbers as HTML
- [Plugin manifest](${u('/.well-known/ai-plugin.json')}): ai-plugin.json pointing at the OpenAPI document
${waitlist}${mcp}`;
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
  /** Only when the operator set one (`--contact-email`): a placeholder address would reach nobody. */
  contact_email?: string;
  legal_info_url: string;
}

/** `/.well-known/ai-plugin.json`. `contactEmail` is the operator's address; without one the manifest has none. */
export function aiPluginManifest(publicBaseUrl: string, contactEmail: string | undefined): AiPluginManifest {
  return {
    schema_version: 'v1',
    name_for_human: 'hilbench',
    name_for_model: 'hilbench',
    // At most 100 characters, as the manifest format asks.
    description_for_human: 'Flash ELF firmware onto remote microcontroller boards and read back their UART output.',
    description_for_model:
      'Runs firmware on microcontroller boards (simulated, emulated or real) and returns what the firmware printed on its UART. ' +
      'Flow: register an agent once (POST /api/v1/agents/register, form field label) and keep the returned token; send it as ' +
      '"authorization: Bearer <token>". Upload an ELF built for the board\'s MCU with POST /api/v1/jobs/flash (multipart: board, ' +
      'firmware, optional uart_seconds); no session is needed, the job takes the board for its own run (GET /examples/{board}/hello.elf ' +
      `is an example ELF). GET /api/v1/jobs/{job_id}?wait=${MAX_JOB_WAIT_SECONDS}&uart=text answers once state is done or failed ` +
      `(else after ${MAX_JOB_WAIT_SECONDS} s: ask again); read uart.text, or failure.message when it failed; POST /api/v1/jobs/{job_id}/cancel ` +
      'frees the board early. For several jobs in a row on one board, open a session (POST /api/v1/sessions, form fields board and ' +
      'idle_seconds), send session with each job, heartbeat it (POST /api/v1/sessions/{sid}/heartbeat) and end it (POST ' +
      '/api/v1/sessions/{sid}/end). Errors are {"detail": ...}; 409 means the board is held by someone else (Retry-After says ' +
      'how long), 422 lists each invalid field. Never send secrets in labels; labels are public.',
    auth: { type: 'user_http', authorization_type: 'bearer' },
    api: { type: 'openapi', url: `${publicBaseUrl}/openapi.json` },
    logo_url: `${publicBaseUrl}/logo.png`,
    ...(contactEmail ? { contact_email: contactEmail } : {}),
    legal_info_url: `${publicBaseUrl}/#legal`,
  };
}
