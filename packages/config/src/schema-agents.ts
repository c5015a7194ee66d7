// The configuration of agents: the model endpoint, the worker's turns and the schedules.
import { z } from 'zod';
import {
  expected,
  positiveInt,
  hostName,
  port,
  intAtLeast,
  matching,
  section,
  notAbove,
} from './schema-kit.ts';

export const llmSchema = section({
  // Any OpenAI-compatible Chat Completions endpoint: OpenAI, OpenRouter, vLLM, Ollama, LiteLLM.
  base_url: matching(/^https?:\/\/\S+$/, 'an http(s) URL').default('https://api.openai.com/v1'),
  // A secret: set it through CG__LLM__API_KEY. Empty sends a placeholder (local servers need none).
  api_key: z.string(expected('a string')).default(''),
  // The model of profiles that name none.
  model: z.string(expected('a model name')).min(1, expected('a model name')).default('gpt-4o-mini'),
  max_retries: intAtLeast(0).default(4),
  retry_base_ms: positiveInt().default(500),
  retry_max_ms: positiveInt().default(20_000),
  request_timeout_ms: positiveInt().default(120_000),
  stream: z.boolean(expected('true or false')).default(true),
}).superRefine((llm, ctx) => {
  notAbove(ctx, 'llm', llm, 'retry_base_ms', 'retry_max_ms');
});

export const agentSchema = section({
  concurrency: positiveInt().default(16),
  max_steps_per_turn: positiveInt().default(16),
  tool_deadline_ms: positiveInt().default(120_000),
  deadline_grace_ms: intAtLeast(0).default(5_000),
  scan_interval_ms: positiveInt().default(1_000),
  // A step's lease is renewed while it runs; an instance that dies loses its turns after this long.
  lease_ttl_ms: intAtLeast(1000).default(30_000),
  ack_wait_ms: intAtLeast(1000).default(30_000),
  max_deliver: positiveInt().default(20),
  max_step_attempts: positiveInt().default(5),
  tool_result_max_chars: positiveInt().default(32_000),
  // Tools offered to the model in full; an agent with more also gets list_available_tools.
  prompt_tools_max: positiveInt().default(32),
  // Tokens (about 4 characters each) a thread's earlier turns may take in a turn's prompt.
  thread_history_tokens: positiveInt().default(16_000),
  // Messages of one thread that may wait for its running turn; one more is refused (409).
  thread_queue_max: positiveInt().default(20),
  // GET /healthz and GET /metrics of the worker process; 0 (the default) picks a free port.
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(0),
});

// Schedules fire from every api instance: each pass claims due schedules (row locks skip what
// another instance holds), so more instances never fire a tick twice.
export const schedulesSchema = section({
  // Whether this api instance fires schedules at all (routes work either way).
  enabled: z.boolean(expected('true or false')).default(true),
  // How often an instance looks for due schedules; a tick fires at most this late.
  poll_ms: intAtLeast(100).default(1_000),
  // A tick found later than this is missed (everything was down): the schedule's catch_up says
  // whether it fires once for the missed ticks or skips them.
  misfire_grace_ms: intAtLeast(1_000).default(60_000),
  // Schedules one pass fires at most, per instance.
  batch_size: positiveInt().default(100),
  max_per_project: positiveInt().default(1_000),
});
