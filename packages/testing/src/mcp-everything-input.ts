// The everything fixture's multi-round-trip tools and prompt on the 2026-07-28 revision
// (SEP-2322): a request the server cannot finish without the client's input is answered
// `input_required`, with the input requests keyed by name and an opaque requestState; the client
// re-sends the same request with `inputResponses` and the state echoed. Each tool here is a
// step: given what the client answered (and the state it echoed), either the final result or
// the next input requests. The state is HMAC-signed with a key of this fixture instance, so a
// state the client changed is refused (-32602).
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

export interface InputRequest {
  method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list';
  params: Record<string, unknown>;
}

export type StepResult =
  | { kind: 'complete'; result: Record<string, unknown> }
  | { kind: 'input'; inputRequests: Record<string, InputRequest>; state?: Record<string, unknown> }
  | { kind: 'error'; code: number; message: string };

export interface StepInput {
  responses: Record<string, unknown> | undefined;
  /** The verified state; undefined when none was sent. */
  state: Record<string, unknown> | undefined;
  clientCapabilities: Record<string, unknown>;
}

const KEY = `everything-fixture-${randomUUID()}`;

export function signState(payload: Record<string, unknown>): string {
  const data = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${data}.${createHmac('sha256', KEY).update(data).digest('base64url')}`;
}

/** The payload of a state this fixture signed; undefined for anything else. */
export function verifyState(raw: string): Record<string, unknown> | undefined {
  const [data, mac, extra] = raw.split('.');
  if (!data || !mac || extra !== undefined) return undefined;
  const want = createHmac('sha256', KEY).update(data).digest();
  const got = Buffer.from(mac, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
  try {
    const v = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const text = (t: string) => ({
  kind: 'complete' as const,
  result: { content: [{ type: 'text', text: t }] },
});

const elicit = (message: string, field: string, type = 'string'): InputRequest => ({
  method: 'elicitation/create',
  params: {
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] },
  },
});
const sample = (prompt: string, maxTokens: number): InputRequest => ({
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens },
});
const ROOTS: InputRequest = { method: 'roots/list', params: {} };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A field of an accepted elicitation's content. */
function field(response: unknown, name: string): string | undefined {
  const content = isRecord(response) ? response['content'] : undefined;
  const v = isRecord(content) ? content[name] : undefined;
  return typeof v === 'string' || typeof v === 'boolean' ? String(v) : undefined;
}
function sampled(response: unknown): string | undefined {
  const content = isRecord(response) ? response['content'] : undefined;
  const t = isRecord(content) ? content['text'] : undefined;
  return typeof t === 'string' ? t : undefined;
}
function rootCount(response: unknown): number | undefined {
  const roots = isRecord(response) ? response['roots'] : undefined;
  return Array.isArray(roots) ? roots.length : undefined;
}

type Step = (i: StepInput) => StepResult;

const TOOLS: Record<string, { description: string; step: Step }> = {
  test_input_required_result_elicitation: {
    description: 'MRTR: asks the client for a name (elicitation)',
    step: ({ responses }) => {
      const name = field(responses?.['user_name'], 'name');
      if (name !== undefined) return text(`Hello, ${name}!`);
      return { kind: 'input', inputRequests: { user_name: elicit('What is your name?', 'name') } };
    },
  },
  test_input_required_result_sampling: {
    description: 'MRTR: asks the client for a completion (sampling)',
    step: ({ responses }) => {
      const r = responses?.['capital_question'] ?? responses?.['sample_request'];
      if (r !== undefined) return text(`Sampling result: ${sampled(r) ?? 'no response'}`);
      return {
        kind: 'input',
        inputRequests: { capital_question: sample('What is the capital of France?', 100) },
      };
    },
  },
  test_input_required_result_list_roots: {
    description: "MRTR: asks for the client's roots (roots/list)",
    step: ({ responses }) => {
      const n = rootCount(responses?.['client_roots'] ?? responses?.['roots_request']);
      if (n !== undefined) return text(`Found ${n} root(s)`);
      return { kind: 'input', inputRequests: { client_roots: ROOTS } };
    },
  },
  test_input_required_result_request_state: {
    description: 'MRTR: input_required with a requestState it validates on the retry',
    step: ({ responses, state }) => {
      if (state?.['kind'] === 'request-state' && field(responses?.['confirm'], 'ok') === 'true') {
        return text('state-ok: requestState validated');
      }
      return {
        kind: 'input',
        inputRequests: { confirm: elicit('Please confirm', 'ok', 'boolean') },
        state: { kind: 'request-state' },
      };
    },
  },
  test_input_required_result_multiple_inputs: {
    description: 'MRTR: elicitation, sampling and roots/list in one input_required',
    step: ({ responses, state }) => {
      const [name, greeting, roots] = ['user_name', 'greeting', 'client_roots'].map(
        (k) => responses?.[k],
      );
      if (state?.['kind'] === 'multiple-inputs' && name && greeting && roots) {
        return text(
          `Name: ${field(name, 'name') ?? 'unknown'}; Greeting: ${sampled(greeting) ?? ''}; Roots: ${rootCount(roots) ?? 0}`,
        );
      }
      return {
        kind: 'input',
        inputRequests: {
          user_name: elicit('What is your name?', 'name'),
          greeting: sample('Generate a greeting', 50),
          client_roots: ROOTS,
        },
        state: { kind: 'multiple-inputs' },
      };
    },
  },
  test_input_required_result_multi_round: {
    description: 'MRTR: two rounds of input, the state carried between them',
    step: ({ responses, state }): StepResult => {
      const name = field(responses?.['step1'], 'name');
      if (state?.['round'] === 1 && name !== undefined) {
        return {
          kind: 'input',
          inputRequests: { step2: elicit('Step 2: What is your favorite color?', 'color') },
          state: { round: 2, name },
        };
      }
      const color = field(responses?.['step2'], 'color');
      if (state?.['round'] === 2 && color !== undefined) {
        return text(`Multi-round complete for ${String(state['name'])} who likes ${color}`);
      }
      return {
        kind: 'input',
        inputRequests: { step1: elicit('Step 1: What is your name?', 'name') },
        state: { round: 1 },
      };
    },
  },
  test_input_required_result_tampered_state: {
    description: 'MRTR: a signed requestState; a changed one is refused',
    step: ({ responses, state }) => {
      if (state?.['kind'] === 'tamper-test' && responses?.['confirm'] !== undefined) {
        return text('integrity-ok: state verified');
      }
      return {
        kind: 'input',
        inputRequests: { confirm: elicit('Please confirm', 'ok', 'boolean') },
        state: { kind: 'tamper-test' },
      };
    },
  },
  test_input_required_result_capabilities: {
    description: 'MRTR: asks only for what the client declared it can answer',
    step: ({ responses, clientCapabilities: caps }) => {
      if (responses && Object.keys(responses).length > 0) {
        return text(`capabilities-ok: received ${Object.keys(responses).join(',')}`);
      }
      const inputRequests: Record<string, InputRequest> = {};
      if (caps['elicitation']) inputRequests['elicit_input'] = elicit('Elicitation input', 'value');
      if (caps['sampling']) inputRequests['sample_input'] = sample('Sample request', 50);
      if (Object.keys(inputRequests).length === 0) {
        return text('No supported capabilities declared');
      }
      return { kind: 'input', inputRequests, state: { kind: 'capabilities-test' } };
    },
  },
};

/** The multi-round-trip tools, as tools/list shows them. */
export const INPUT_TOOLS = Object.entries(TOOLS).map(([name, t]) => ({
  name,
  description: t.description,
  inputSchema: { type: 'object' as const, properties: {} },
}));

export const INPUT_PROMPT = {
  name: 'test_input_required_result_prompt',
  description: 'MRTR: a prompt that needs elicitation input',
};

const prompt: Step = ({ responses }) => {
  const context = field(responses?.['user_context'], 'context');
  if (context !== undefined) {
    return {
      kind: 'complete',
      result: {
        messages: [
          { role: 'user', content: { type: 'text', text: `Prompt with context: ${context}` } },
        ],
      },
    };
  }
  return {
    kind: 'input',
    inputRequests: { user_context: elicit('What context should the prompt use?', 'context') },
  };
};

/** A resource whose read needs the client's input (2026-07-28 only). */
export const INPUT_RESOURCE = {
  uri: 'test://input-required-resource',
  name: 'input-required-resource',
  description: 'MRTR: a resource read that needs elicitation input',
  mimeType: 'text/plain',
};

const resource: Step = ({ responses, state }) => {
  const purpose = field(responses?.['purpose'], 'purpose');
  if (state?.['kind'] === 'resource' && purpose !== undefined) {
    return {
      kind: 'complete',
      result: {
        contents: [
          { uri: INPUT_RESOURCE.uri, mimeType: 'text/plain', text: `Read for: ${purpose}` },
        ],
      },
    };
  }
  return {
    kind: 'input',
    inputRequests: { purpose: elicit('Why do you read this resource?', 'purpose') },
    state: { kind: 'resource' },
  };
};

/**
 * Runs a multi-round-trip tool, prompt or resource when `name` (a read's `uri`) is one:
 * undefined otherwise. Malformed
 * `inputResponses` (not an object of objects) and a state this fixture did not sign are
 * protocol errors (-32602).
 */
export function runInputStep(
  method: 'tools/call' | 'prompts/get' | 'resources/read',
  params: Record<string, unknown>,
  clientCapabilities: Record<string, unknown>,
): StepResult | undefined {
  const name = params['name'];
  const step =
    method === 'resources/read'
      ? params['uri'] === INPUT_RESOURCE.uri
        ? resource
        : undefined
      : method === 'prompts/get'
        ? name === INPUT_PROMPT.name
          ? prompt
          : undefined
        : typeof name === 'string'
          ? TOOLS[name]?.step
          : undefined;
  if (!step) return undefined;
  const responses = params['inputResponses'];
  if (
    responses !== undefined &&
    (!isRecord(responses) || !Object.values(responses).every(isRecord))
  ) {
    return { kind: 'error', code: -32602, message: 'inputResponses must map keys to results' };
  }
  let state: Record<string, unknown> | undefined;
  const raw = params['requestState'];
  if (raw !== undefined) {
    state = typeof raw === 'string' ? verifyState(raw) : undefined;
    if (!state) {
      return { kind: 'error', code: -32602, message: 'requestState integrity check failed' };
    }
  }
  return step({ responses, state, clientCapabilities });
}
