// The features of the everything fixture server: the conformance suite's server scenarios
// (@modelcontextprotocol/conformance 0.1.16) name test tools, resources, a template, prompts,
// completion and logging, and say what each must answer. Modelled on the suite's own
// examples/servers/typescript/everything-server.ts, built on the official SDK's McpServer.
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import {
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type ElicitRequest,
  type ListToolsResult,
  type LoggingLevel,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** A 1x1 red PNG. */
export const TEST_IMAGE_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A minimal WAV file. */
const TEST_AUDIO_BASE64 = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

/**
 * SEP-1613 and SEP-2106: listed as is, to check that `$schema`, `$defs` (with an `$anchor`),
 * `additionalProperties`, composition (`allOf`/`anyOf`) and conditionals (`if`/`then`/`else`)
 * survive.
 */
export const JSON_SCHEMA_2020_12_INPUT_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object' as const,
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

/** What a server of this kind shares across its sessions. */
export interface EverythingState {
  /** URIs some session subscribed to. */
  subscriptions: Set<string>;
  /** Called when a tool closes its request's SSE stream mid-call (SEP-1699). */
  closeStream?: (sessionId: string | undefined, requestId: string | number) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

export function createEverythingServer(state: EverythingState): McpServer {
  const mcp = new McpServer(
    { name: 'mcp-conformance-test-server', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
    },
  );
  const log = (level: LoggingLevel, data: string) =>
    mcp.server
      .notification({
        method: 'notifications/message',
        params: { level, logger: 'conformance-test-server', data },
      })
      .catch(() => undefined);

  mcp.registerTool('test_simple_text', { description: 'Tests simple text content response' }, () =>
    text('This is a simple text response for testing.'),
  );
  mcp.registerTool('test_image_content', { description: 'Tests image content response' }, () => ({
    content: [{ type: 'image', data: TEST_IMAGE_BASE64, mimeType: 'image/png' }],
  }));
  mcp.registerTool('test_audio_content', { description: 'Tests audio content response' }, () => ({
    content: [{ type: 'audio', data: TEST_AUDIO_BASE64, mimeType: 'audio/wav' }],
  }));
  mcp.registerTool(
    'test_embedded_resource',
    { description: 'Tests embedded resource content response' },
    () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ],
    }),
  );
  mcp.registerTool(
    'test_multiple_content_types',
    { description: 'Tests response with multiple content types (text, image, resource)' },
    () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: TEST_IMAGE_BASE64, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 }),
          },
        },
      ],
    }),
  );
  mcp.registerTool(
    'test_tool_with_logging',
    { description: 'Tests tool that emits log messages during execution', inputSchema: {} },
    async (_args, extra) => {
      for (const [i, data] of [
        'Tool execution started',
        'Tool processing data',
        'Tool execution completed',
      ].entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', data },
        });
      }
      return text('Tool with logging executed successfully');
    },
  );
  mcp.registerTool(
    'test_tool_with_progress',
    { description: 'Tests tool that reports progress notifications', inputSchema: {} },
    async (_args, extra) => {
      const progressToken = extra._meta?.progressToken ?? 0;
      for (const progress of [0, 50, 100]) {
        if (progress > 0) await sleep(50);
        await extra.sendNotification({
          method: 'notifications/progress',
          params: {
            progressToken,
            progress,
            total: 100,
            message: `Completed step ${progress} of 100`,
          },
        });
      }
      return text(String(progressToken));
    },
  );
  mcp.registerTool('test_error_handling', { description: 'Tests error response handling' }, () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  mcp.registerTool(
    'test_reconnection',
    {
      description:
        'Tests SSE stream disconnection and client reconnection (SEP-1699): closes the stream mid-call and answers after the client reconnects.',
      inputSchema: {},
    },
    async (_args, extra) => {
      state.closeStream?.(extra.sessionId, extra.requestId);
      await sleep(100);
      return text(
        'Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.',
      );
    },
  );
  mcp.registerTool(
    'test_sampling',
    {
      description: 'Tests server-initiated sampling (LLM completion request)',
      inputSchema: { prompt: z.string().describe('The prompt to send to the LLM') },
    },
    async ({ prompt }, extra) => {
      try {
        const res = await extra.sendRequest(
          {
            method: 'sampling/createMessage',
            params: {
              messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
              maxTokens: 100,
            },
          },
          CreateMessageResultSchema,
        );
        const said = res.content.type === 'text' ? res.content.text : 'No response';
        return text(`LLM response: ${said}`);
      } catch (err) {
        return text(`Sampling not supported or error: ${(err as Error).message}`);
      }
    },
  );
  const elicit = async (
    params: ElicitRequest['params'],
    prefix: string,
    sendRequest: (r: ElicitRequest, s: typeof ElicitResultSchema) => Promise<unknown>,
  ) => {
    try {
      const res = (await sendRequest(
        { method: 'elicitation/create', params },
        ElicitResultSchema,
      )) as {
        action: string;
        content?: unknown;
      };
      return text(`${prefix}: action=${res.action}, content=${JSON.stringify(res.content ?? {})}`);
    } catch (err) {
      return text(`Elicitation not supported or error: ${(err as Error).message}`);
    }
  };
  mcp.registerTool(
    'test_elicitation',
    {
      description: 'Tests server-initiated elicitation (user input request)',
      inputSchema: { message: z.string().describe('The message to show the user') },
    },
    ({ message }, extra) =>
      elicit(
        {
          message,
          requestedSchema: {
            type: 'object',
            properties: { response: { type: 'string', description: "User's response" } },
            required: ['response'],
          },
        },
        'User response',
        extra.sendRequest,
      ),
  );
  mcp.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Tests elicitation with default values per SEP-1034', inputSchema: {} },
    (_args, extra) =>
      elicit(
        {
          message: 'Please review and update the form fields with defaults',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: {
                type: 'string',
                description: 'User status',
                enum: ['active', 'inactive', 'pending'],
                default: 'active',
              },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
            required: [],
          },
        },
        'Elicitation completed',
        extra.sendRequest,
      ),
  );
  mcp.registerTool(
    'test_elicitation_sep1330_enums',
    {
      description: 'Tests elicitation with enum schema improvements per SEP-1330',
      inputSchema: {},
    },
    (_args, extra) =>
      elicit(
        {
          message: 'Please select options from the enum fields',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: {
                type: 'string',
                description: 'Select one option',
                enum: ['option1', 'option2', 'option3'],
              },
              titledSingle: {
                type: 'string',
                description: 'Select one option with titles',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                description: 'Select one option (legacy)',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Select multiple options',
                minItems: 1,
                maxItems: 3,
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Select multiple options with titles',
                minItems: 1,
                maxItems: 3,
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
            required: [],
          },
        },
        'Elicitation completed',
        extra.sendRequest,
      ),
  );
  mcp.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)',
      inputSchema: {
        name: z.string().optional(),
        address: z
          .object({ street: z.string().optional(), city: z.string().optional() })
          .optional(),
      },
    },
    (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  );

  registerResources(mcp, state, log);
  registerPrompts(mcp);

  mcp.server.setRequestHandler(SetLevelRequestSchema, (req) => {
    void log('info', `Log level set to: ${req.params.level}`);
    return {};
  });
  mcp.server.setRequestHandler(CompleteRequestSchema, () => ({
    completion: { values: [], total: 0, hasMore: false },
  }));
  listRawSchemas(mcp);
  return mcp;
}

function registerResources(
  mcp: McpServer,
  state: EverythingState,
  log: (level: LoggingLevel, data: string) => Promise<unknown>,
): void {
  mcp.registerResource(
    'static-text',
    'test://static-text',
    {
      title: 'Static Text Resource',
      description: 'A static text resource for testing',
      mimeType: 'text/plain',
    },
    () => ({
      contents: [
        {
          uri: 'test://static-text',
          mimeType: 'text/plain',
          text: 'This is the content of the static text resource.',
        },
      ],
    }),
  );
  mcp.registerResource(
    'static-binary',
    'test://static-binary',
    {
      title: 'Static Binary Resource',
      description: 'A static binary resource (image) for testing',
      mimeType: 'image/png',
    },
    () => ({
      contents: [{ uri: 'test://static-binary', mimeType: 'image/png', blob: TEST_IMAGE_BASE64 }],
    }),
  );
  mcp.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    {
      title: 'Resource Template',
      description: 'A resource template with parameter substitution',
      mimeType: 'application/json',
    },
    (uri, { id }) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: 'application/json',
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }),
        },
      ],
    }),
  );
  mcp.registerResource(
    'watched-resource',
    'test://watched-resource',
    {
      title: 'Watched Resource',
      description: 'A resource that auto-updates every 3 seconds',
      mimeType: 'text/plain',
    },
    () => ({
      contents: [
        {
          uri: 'test://watched-resource',
          mimeType: 'text/plain',
          text: 'Watched resource content',
        },
      ],
    }),
  );
  mcp.server.setRequestHandler(SubscribeRequestSchema, (req) => {
    state.subscriptions.add(req.params.uri);
    void log('info', `Subscribed to resource: ${req.params.uri}`);
    return {};
  });
  mcp.server.setRequestHandler(UnsubscribeRequestSchema, (req) => {
    state.subscriptions.delete(req.params.uri);
    void log('info', `Unsubscribed from resource: ${req.params.uri}`);
    return {};
  });
}

function registerPrompts(mcp: McpServer): void {
  mcp.registerPrompt(
    'test_simple_prompt',
    { title: 'Simple Test Prompt', description: 'A simple prompt without arguments' },
    () => ({
      messages: [
        { role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } },
      ],
    }),
  );
  mcp.registerPrompt(
    'test_prompt_with_arguments',
    {
      title: 'Prompt With Arguments',
      description: 'A prompt with required arguments',
      argsSchema: {
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument'),
      },
    },
    ({ arg1, arg2 }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
  );
  mcp.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      title: 'Prompt With Embedded Resource',
      description: 'A prompt that includes an embedded resource',
      argsSchema: { resourceUri: z.string().describe('URI of the resource to embed') },
    },
    ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        {
          role: 'user',
          content: { type: 'text', text: 'Please process the embedded resource above.' },
        },
      ],
    }),
  );
  mcp.registerPrompt(
    'test_prompt_with_image',
    { title: 'Prompt With Image', description: 'A prompt that includes image content' },
    () => ({
      messages: [
        {
          role: 'user',
          content: { type: 'image', data: TEST_IMAGE_BASE64, mimeType: 'image/png' },
        },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  );
}

/**
 * tools/list with the SEP-1613 tool's raw JSON Schema: McpServer converts zod shapes and would
 * drop `$schema`, `$defs` and `additionalProperties`. As the suite's own server does, the
 * registered tools are read from McpServer's internal map.
 */
function listRawSchemas(mcp: McpServer): void {
  const registered = (
    mcp as unknown as {
      _registeredTools: Record<
        string,
        { enabled: boolean; title?: string; description?: string; inputSchema?: unknown }
      >;
    }
  )._registeredTools;
  mcp.server.setRequestHandler(ListToolsRequestSchema, (): ListToolsResult => ({
    tools: Object.entries(registered)
      .filter(([, t]) => t.enabled)
      .map(([name, t]): Tool => {
        if (name === 'json_schema_2020_12_tool') {
          return {
            name,
            ...(t.description ? { description: t.description } : {}),
            inputSchema: JSON_SCHEMA_2020_12_INPUT_SCHEMA,
          };
        }
        const inputSchema = t.inputSchema
          ? (toJsonSchemaCompat(t.inputSchema as never, {
              strictUnions: true,
              pipeStrategy: 'input',
            }) as Tool['inputSchema'])
          : { type: 'object' as const, properties: {} };
        return {
          name,
          ...(t.title ? { title: t.title } : {}),
          ...(t.description ? { description: t.description } : {}),
          inputSchema,
        };
      }),
  }));
}
