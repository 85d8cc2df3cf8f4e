// The OpenAI wire format, in one place: request bodies built from a
// CompletionRequest, and zod schemas for what comes back (online responses,
// stream chunks, batch result lines). Shared by the client and batch files.
import { z } from 'zod';
import type { CompletionRequest } from './client';
import type { ApiMode, EndpointConfig, Sampling } from './config';
import { ModelError } from './errors';
import { toJsonSchema } from './json-schema';
import { asMessages, asText } from './prompt';

// What comes back, validated. Servers differ in what they leave out, so only
// the fields this client reads are required.
const UsageSchema = z
  .object({ prompt_tokens: z.number().int().nonnegative().nullish(), completion_tokens: z.number().int().nonnegative().nullish() })
  .passthrough();
export const ChatResponseSchema = z.object({
  model: z.string().nullish(),
  choices: z.array(
    z.object({
      index: z.number().int().nonnegative().nullish(),
      message: z.object({ content: z.string().nullish() }).passthrough(),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: UsageSchema.nullish(),
});
export const TextResponseSchema = z.object({
  model: z.string().nullish(),
  choices: z.array(z.object({ index: z.number().int().nonnegative().nullish(), text: z.string().nullish(), finish_reason: z.string().nullish() })),
  usage: UsageSchema.nullish(),
});
export const ChatChunkSchema = z.object({
  choices: z
    .array(z.object({ index: z.number().int().nonnegative().nullish(), delta: z.object({ content: z.string().nullish() }).passthrough().nullish(), finish_reason: z.string().nullish() }))
    .nullish(),
  usage: UsageSchema.nullish(),
});
export const TextChunkSchema = z.object({
  choices: z.array(z.object({ index: z.number().int().nonnegative().nullish(), text: z.string().nullish(), finish_reason: z.string().nullish() })).nullish(),
  usage: UsageSchema.nullish(),
});

export interface RawResult {
  samples: { text: string; finishReason: string | null }[];
  promptTokens: number;
  completionTokens: number;
  model: string;
}

export function buildRequestBody(
config: Pick<EndpointConfig, 'model' | 'api'>,
request: Pick<CompletionRequest, 'prompt' | 'output'>,
n: number,
sampling: Sampling,
useSchema: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = { model: config.model };
  if (config.api === 'chat') body.messages = asMessages(request.prompt);
  else body.prompt = asText(request.prompt);
  if (n !== 1) body.n = n;
  if (sampling.temperature !== undefined) body.temperature = sampling.temperature;
  if (sampling.topP !== undefined) body.top_p = sampling.topP;
  if (sampling.maxTokens !== undefined) body.max_tokens = sampling.maxTokens;
  if (sampling.seed !== undefined) body.seed = sampling.seed;
  if (sampling.stop !== undefined) body.stop = sampling.stop;
  if (useSchema && request.output) {
    body.response_format = { type: 'json_schema', json_schema: { name: request.output.name, schema: toJsonSchema(request.output.schema), strict: true } };
  }
  return body;
}

export function parseCompletionResponse(response: unknown, api: ApiMode, defaultModel: string): RawResult {
const chat = api === 'chat';
  if (typeof response !== 'object' || response === null) {
    throw new ModelError('bad_response', 'the server answered with something that is not JSON; is the base URL an OpenAI-compatible API (usually ending in /v1)?');
  }
  if (chat) {
    const parsed = ChatResponseSchema.safeParse(response);
    if (!parsed.success) throw new ModelError('bad_response', `the server's answer is not a chat completion: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`);
    const choices = parsed.data.choices.slice().sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return {
      samples: choices.map((c) => ({ text: c.message.content ?? '', finishReason: c.finish_reason ?? null })),
      promptTokens: parsed.data.usage?.prompt_tokens ?? 0,
      completionTokens: parsed.data.usage?.completion_tokens ?? 0,
      model: parsed.data.model ?? defaultModel,
    };
  }
  const parsed = TextResponseSchema.safeParse(response);
  if (!parsed.success) throw new ModelError('bad_response', `the server's answer is not a text completion: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`);
  const choices = parsed.data.choices.slice().sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  return {
    samples: choices.map((c) => ({ text: c.text ?? '', finishReason: c.finish_reason ?? null })),
    promptTokens: parsed.data.usage?.prompt_tokens ?? 0,
    completionTokens: parsed.data.usage?.completion_tokens ?? 0,
    model: parsed.data.model ?? defaultModel,
  };
}
