/**
 * The MCP SDK, loaded when the first /mcp request comes. With zod and its schemas it held ~6.6 MB of
 * an idle gateway's heap: a gateway whose operators never use MCP does not carry them. Only types
 * are imported statically (test/architecture.test.ts keeps it so).
 */
export async function loadMcpSdk() {
  const [server, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Server: server.Server,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
    isInitializeRequest: types.isInitializeRequest,
    CallToolRequestSchema: types.CallToolRequestSchema,
    GetPromptRequestSchema: types.GetPromptRequestSchema,
    ListPromptsRequestSchema: types.ListPromptsRequestSchema,
    ListResourcesRequestSchema: types.ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema: types.ListResourceTemplatesRequestSchema,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
    ReadResourceRequestSchema: types.ReadResourceRequestSchema,
    SubscribeRequestSchema: types.SubscribeRequestSchema,
    UnsubscribeRequestSchema: types.UnsubscribeRequestSchema,
  };
}

export type McpSdk = Awaited<ReturnType<typeof loadMcpSdk>>;

let loading: Promise<McpSdk> | undefined;

/** The SDK, loaded once; a failed load is tried again by the next caller. */
export function mcpSdk(): Promise<McpSdk> {
  loading ??= loadMcpSdk().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
