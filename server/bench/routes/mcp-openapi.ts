/**
 * `POST /mcp` in `/openapi.json`, when the service serves it (`config.mcp`, given by `hilbench
 * serve`). Its handler lives in lib/mcp, above this layer; the path item lives here so that an
 * agent reading the document finds the endpoint that llms.txt and the home page name.
 * docs/mcp.md says what the tools do.
 */

const errorDetail = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorDetail' } } } });

/** The MCP SDK answers its own refusals as JSON-RPC errors, not `{"detail"}`. */
const jsonRpcError = (description: string) => ({
  description,
  content: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 error: {"jsonrpc": "2.0", "error": {"code", "message"}, "id"}' } } },
});

export const mcpOpenApiPath = {
  '/mcp': {
    post: {
      tags: ['mcp'],
      summary: 'The bench as Model Context Protocol tools over streamable HTTP (stateless, JSON answers); see docs/mcp.md',
      description:
        'Tools: list_boards, run_firmware, open_session, heartbeat_session, end_session, get_job, stream_job_uart. Each acts through this API with the ' +
        "caller's token; a tool's failure is a tool result with isError and the API's own words. Send Accept: application/json, text/event-stream. " +
        'GET and DELETE are 405: a stateless endpoint has no server-initiated stream and no MCP session.',
      operationId: 'mcp',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 message of MCP (initialize, tools/list, tools/call, ...)' } } },
      },
      responses: {
        '200': { description: 'The JSON-RPC answer', content: { 'application/json': { schema: { type: 'object' } } } },
        // What every MCP client sends after initialize (notifications/initialized) gets this.
        '202': { description: 'Accepted, no body: the message held only notifications or responses, which have no answer' },
        '400': jsonRpcError('Not a JSON-RPC message (parse error, invalid request)'),
        '401': errorDetail('Missing, malformed or unknown bearer token (with WWW-Authenticate: Bearer)'),
        '406': jsonRpcError('Accept does not name both application/json and text/event-stream'),
        '413': jsonRpcError('Body over the MCP SDK\'s 4 MiB'),
        '415': jsonRpcError('Body is not application/json'),
        '500': errorDetail('Internal Server Error (unexpected; logged on the server)'),
      },
      security: [{ HTTPBearer: [] }],
    },
  },
};
