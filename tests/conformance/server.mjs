// A conformance target server written with the official TypeScript SDK: it implements
// every name the conformance suite's server scenarios call (test_simple_text,
// test://static-text, test_simple_prompt, …) so that every scenario passes directly,
// and therefore must pass through clawai too. Speaks stdio.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer as createHttpServer } from "node:http";
import { randomUUID } from "node:crypto";
import {
  CallToolRequestSchema, CompleteRequestSchema, GetPromptRequestSchema, ListPromptsRequestSchema,
  ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ListToolsRequestSchema,
  ReadResourceRequestSchema, SetLevelRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const empty = { type: "object", properties: {}, required: [] };

function createServer() {
const server = new Server(
  { name: "clawai-conformance-target", version: "1.0.0" },
  { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
);

const tools = [
  { name: "test_simple_text", description: "Returns simple text", inputSchema: empty },
  { name: "test_image_content", description: "Returns an image", inputSchema: empty },
  { name: "test_audio_content", description: "Returns audio", inputSchema: empty },
  { name: "test_embedded_resource", description: "Returns an embedded resource", inputSchema: empty },
  { name: "test_multiple_content_types", description: "Returns mixed content", inputSchema: empty },
  { name: "test_tool_with_logging", description: "Logs while running", inputSchema: empty },
  { name: "test_tool_with_progress", description: "Reports progress", inputSchema: empty },
  { name: "test_error_handling", description: "Always fails", inputSchema: empty },
  { name: "test_sampling", description: "Asks the client's LLM", inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] } },
  { name: "test_elicitation", description: "Asks the user", inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] } },
  { name: "test_elicitation_sep1034_defaults", description: "Elicitation with defaults", inputSchema: empty },
  { name: "test_elicitation_sep1330_enums", description: "Elicitation with enums", inputSchema: empty },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
  },
];

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args = {} } = request.params;
  switch (name) {
    case "test_simple_text":
      return { content: [{ type: "text", text: "This is a simple text response for testing." }] };
    case "test_image_content":
      return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
    case "test_audio_content":
      return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
    case "test_embedded_resource":
      return { content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }] };
    case "test_multiple_content_types":
      return {
        content: [
          { type: "text", text: "Multiple content types test:" },
          { type: "image", data: PNG, mimeType: "image/png" },
          { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) } },
        ],
      };
    case "test_tool_with_logging": {
      const log = (data) => extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
      await log("Tool execution started");
      await sleep(50);
      await log("Tool processing data");
      await sleep(50);
      await log("Tool execution completed");
      return { content: [{ type: "text", text: "Tool with logging executed successfully" }] };
    }
    case "test_tool_with_progress": {
      const token = request.params._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100, message: `Completed step ${progress}` } });
        }
        if (progress < 100) await sleep(50);
      }
      return { content: [{ type: "text", text: "Tool with progress executed successfully" }] };
    }
    case "test_error_handling":
      return { isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] };
    case "test_sampling": {
      // Related to this call, so that over HTTP it travels on the call's event stream.
      const result = await server.createMessage({ messages: [{ role: "user", content: { type: "text", text: args.prompt } }], maxTokens: 100 }, { relatedRequestId: extra.requestId });
      const text = result.content?.type === "text" ? result.content.text : JSON.stringify(result.content);
      return { content: [{ type: "text", text: `LLM response: ${text}` }] };
    }
    case "test_elicitation": {
      const result = await server.elicitInput({
        message: args.message,
        requestedSchema: {
          type: "object",
          properties: { username: { type: "string", description: "User's response" }, email: { type: "string", description: "User's email address" } },
          required: ["username", "email"],
        },
      }, { relatedRequestId: extra.requestId });
      return { content: [{ type: "text", text: `User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }] };
    }
    case "test_elicitation_sep1034_defaults": {
      const result = await server.elicitInput({
        message: "Please review and update the form fields with defaults",
        requestedSchema: {
          type: "object",
          properties: {
            name: { type: "string", description: "User name", default: "John Doe" },
            age: { type: "integer", description: "User age", default: 30 },
            score: { type: "number", description: "User score", default: 95.5 },
            status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
            verified: { type: "boolean", description: "Verification status", default: true },
          },
          required: [],
        },
      }, { relatedRequestId: extra.requestId });
      return { content: [{ type: "text", text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }] };
    }
    case "test_elicitation_sep1330_enums": {
      const result = await server.elicitInput({
        message: "Please select options from the enum fields",
        requestedSchema: {
          type: "object",
          properties: {
            untitledSingle: { type: "string", description: "Untitled single-select", enum: ["option1", "option2", "option3"] },
            titledSingle: { type: "string", description: "Titled single-select", oneOf: [{ const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
            legacyEnum: { type: "string", description: "Legacy titled enum", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
            untitledMulti: { type: "array", description: "Untitled multi-select", items: { type: "string", enum: ["option1", "option2", "option3"] } },
            titledMulti: { type: "array", description: "Titled multi-select", items: { anyOf: [{ const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } },
          },
          required: [],
        },
      }, { relatedRequestId: extra.requestId });
      return { content: [{ type: "text", text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }] };
    }
    case "json_schema_2020_12_tool":
      return { content: [{ type: "text", text: `Received: ${JSON.stringify(args)}` }] };
    default:
      return { isError: true, content: [{ type: "text", text: `Unknown tool: ${name}` }] };
  }
});

const resources = [
  { uri: "test://static-text", name: "Static text", description: "A static text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "Static binary", description: "A static binary resource", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "Watched", description: "A resource that can be subscribed to", mimeType: "text/plain" },
];
server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources }));
server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
  resourceTemplates: [{ uriTemplate: "test://template/{id}/data", name: "Template", description: "A resource template", mimeType: "application/json" }],
}));
server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
  const { uri } = request.params;
  if (uri === "test://static-text") return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
  if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
  if (uri === "test://watched-resource") return { contents: [{ uri, mimeType: "text/plain", text: "Watched resource content" }] };
  const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (m) return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
  throw new Error(`Resource not found: ${uri}`);
});
const subscriptions = new Set();
server.setRequestHandler(SubscribeRequestSchema, async (request) => (subscriptions.add(request.params.uri), {}));
server.setRequestHandler(UnsubscribeRequestSchema, async (request) => (subscriptions.delete(request.params.uri), {}));

const prompts = [
  { name: "test_simple_prompt", description: "A simple prompt" },
  { name: "test_prompt_with_arguments", description: "A prompt with arguments", arguments: [{ name: "arg1", description: "First test argument", required: true }, { name: "arg2", description: "Second test argument", required: true }] },
  { name: "test_prompt_with_embedded_resource", description: "A prompt with a resource", arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }] },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
];
server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts }));
server.setRequestHandler(GetPromptRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  switch (name) {
    case "test_simple_prompt":
      return { messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] };
    case "test_prompt_with_arguments":
      return { messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` } }] };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          { role: "user", content: { type: "resource", resource: { uri: args.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } },
          { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
          { role: "user", content: { type: "text", text: "Please analyze the image above." } },
        ],
      };
    default:
      throw new Error(`Unknown prompt: ${name}`);
  }
});
server.setRequestHandler(CompleteRequestSchema, async (request) => {
  const value = request.params.argument?.value ?? "";
  const values = ["paris", "park", "party"].filter((v) => v.startsWith(value));
  return { completion: { values, total: values.length, hasMore: false } };
});
server.setRequestHandler(SetLevelRequestSchema, async () => ({}));

return server;
}

if (process.argv[2] === "http") {
  const port = Number(process.argv[3] || 3002);
  const local = [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`];
  const sessions = new Map();
  const readBody = (req) => new Promise((resolve) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined));
  });
  createHttpServer(async (req, res) => {
    const body = req.method === "POST" ? await readBody(req) : undefined;
    const id = req.headers["mcp-session-id"];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (req.method !== "POST" || body?.method !== "initialize") {
        res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no such session" } }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
        enableDnsRebindingProtection: true,
        allowedHosts: local,
        allowedOrigins: local.map((h) => `http://${h}`),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await createServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }).listen(port, "127.0.0.1", () => console.error(`conformance target on http://127.0.0.1:${port}/mcp`));
} else {
  await createServer().connect(new StdioServerTransport());
}
