// Where the model lives and how to sample from it: one zod schema for the
// endpoint, read from flags, environment variables or editor settings.
// The API key travels with the config but is never logged, cached or exported:
// `describeEndpoint` and `redactSecrets` are the only ways it leaves the client.
import { z } from 'zod';

export const ApiModeSchema = z.enum(['chat', 'completions']);
export type ApiMode = z.infer<typeof ApiModeSchema>;

/** Sampling parameters: part of every cache key. */
export const SamplingSchema = z.object({
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().gt(0).max(1).optional(),
  maxTokens: z.number().int().positive().optional(),
  seed: z.number().int().optional(),
  stop: z.array(z.string().min(1)).max(4).optional(),
});
export type Sampling = z.infer<typeof SamplingSchema>;

export const EndpointConfigSchema = SamplingSchema.extend({
  /** OpenAI-compatible base URL, ending in /v1 for most servers. */
  baseURL: z.string().url(),
  model: z.string().min(1),
  /** Secret. Local servers (vLLM, Ollama, llama.cpp) accept any value or none. */
  apiKey: z.string().optional(),
  /** chat: /v1/chat/completions with messages; completions: /v1/completions with raw text. */
  api: ApiModeSchema.default('chat'),
  /** Default samples per question (k). */
  n: z.number().int().positive().max(128).default(1),
  /** Per attempt: whole request without streaming, time to first byte with streaming. */
  timeoutMs: z.number().int().positive().default(120_000),
  /** Streaming: longest silence between two chunks before the attempt is abandoned. */
  streamIdleMs: z.number().int().positive().default(30_000),
  /** HTTP requests in flight at once, across all callers of one client. */
  concurrency: z.number().int().positive().max(1024).default(8),
  /** Retries after the first attempt (429, 5xx, timeouts, resets, malformed bodies). */
  retries: z.number().int().nonnegative().max(20).default(4),
  /** First backoff step; doubles per retry, with full jitter, capped at maxBackoffMs. */
  backoffMs: z.number().int().nonnegative().default(500),
  maxBackoffMs: z.number().int().nonnegative().default(30_000),
  /** A Retry-After longer than this fails the request instead of waiting. */
  maxRetryAfterMs: z.number().int().nonnegative().default(120_000),
  /** Responses larger than this are refused (a runaway generation, a wrong URL). */
  maxResponseBytes: z
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  /** auto: ask for JSON-schema output and fall back to text if the server refuses. */
  structuredOutput: z.enum(['auto', 'json_schema', 'off']).default('auto'),
});
export type EndpointConfig = z.infer<typeof EndpointConfigSchema>;
export type EndpointConfigInput = z.input<typeof EndpointConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Validates a config, turning zod's issues into one readable line. */
export function parseEndpointConfig(input: EndpointConfigInput): EndpointConfig {
  const parsed = EndpointConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid model endpoint settings: ${issues}`);
  }
  return parsed.data;
}

/**
 * The endpoint from environment variables, or undefined when none is set:
 * EXECVERIFY_BASE_URL (or OPENAI_BASE_URL), EXECVERIFY_MODEL, and the key from
 * EXECVERIFY_API_KEY or OPENAI_API_KEY. Explicit overrides (CLI flags) win.
 */
export function endpointFromEnv(env: NodeJS.ProcessEnv, overrides: Partial<EndpointConfigInput> = {}): EndpointConfig | undefined {
  const baseURL = overrides.baseURL ?? env.EXECVERIFY_BASE_URL ?? env.OPENAI_BASE_URL;
  const model = overrides.model ?? env.EXECVERIFY_MODEL;
  if (!baseURL && !model) return undefined;
  if (!baseURL) throw new ConfigError('a model is set but no endpoint: pass --base-url or set EXECVERIFY_BASE_URL (for example http://127.0.0.1:8000/v1)');
  if (!model) throw new ConfigError('an endpoint is set but no model: pass --model or set EXECVERIFY_MODEL (the name the server serves, see GET /v1/models)');
  const apiKey = overrides.apiKey ?? env.EXECVERIFY_API_KEY ?? env.OPENAI_API_KEY;
  const api = overrides.api ?? (env.EXECVERIFY_API === 'completions' ? 'completions' : undefined);
  return parseEndpointConfig({ ...overrides, baseURL, model, apiKey, ...(api ? { api } : {}) });
}

/** The endpoint without its base URL's credentials or query, for labels and cache keys. */
export function endpointKey(baseURL: string): string {
  const url = new URL(baseURL);
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return url.href.replace(/\/+$/, '');
}

/** A label safe to print: model and host, never the key. */
export function describeEndpoint(config: Pick<EndpointConfig, 'baseURL' | 'model'>): string {
  return `${config.model} @ ${endpointKey(config.baseURL)}`;
}

/** Replaces every occurrence of each secret (and `Bearer <secret>`) with `***`. */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    out = out.split(secret).join('***');
  }
  return out;
}

/**
 * Redacts a secret from text that arrives in pieces (a streamed answer): what
 * `push` returns never holds the secret, even when a server splits it over
 * chunks, because a tail that could be the secret's beginning is held back
 * until the next piece (or `flush`) decides. The pieces returned, joined, are
 * redactSecrets of the whole text.
 */
export class StreamRedactor {
  #held = '';
  constructor(private readonly secret: string) {}

  push(piece: string): string {
    const text = redactSecrets(this.#held + piece, [this.secret]);
    const first = this.secret[0];
    let keep = 0;
    for (let i = Math.max(0, text.length - this.secret.length + 1); i < text.length; i++) {
      if (text[i] === first && this.secret.startsWith(text.slice(i))) {
        keep = text.length - i;
        break;
      }
    }
    this.#held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  flush(): string {
    const rest = this.#held;
    this.#held = '';
    return rest;
  }
}
