// The OpenAI wire format, in one place: request bodies built from a
// CompletionRequest, and zod schemas for what comes back (online responses,
// stream chunks, batch result lines). Shared by the client and batch files.
import { z } from 'zod';
import type { CompletionRequest } from './completion';
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
    .array(
      z.object({
        index: z.number().int().nonnegative().nullish(),
        delta: z.object({ content: z.string().nullish() }).passthrough().nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
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

// A hand-written check of exactly what ChatResponseSchema / TextResponseSchema
// accept, for the hot path: zod's generic parse cost about a tenth of the
// client's CPU per request against a local server. It answers only "certainly
// valid"; anything it does not accept goes through the zod schema, which stays
// the schema of record (and writes the error message). The unit tests compare
// both on valid and invalid responses.
// Plain objects only (what JSON.parse builds): zod classes arrays, dates, maps,
// sets and thenables differently, so those are left to it.
const isObject = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (v as { then?: unknown }).then !== 'function';
};
const nullish = (v: unknown): boolean => v === undefined || v === null;
const nullishString = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';
// z.number().int().nonnegative(): a finite integer ≥ 0 (z.number() also refuses NaN).
const nullishCount = (v: unknown): boolean => v === undefined || v === null || (typeof v === 'number' && Number.isInteger(v) && v >= 0);

/** True only when `response` certainly passes ChatResponseSchema (chat) or TextResponseSchema. */
export function fastResponseCheck(response: unknown, chat: boolean): boolean {
  if (!isObject(response)) return false;
  if (!nullishString(response.model)) return false;
  const usage = response.usage;
  if (!nullish(usage) && !(isObject(usage) && nullishCount(usage.prompt_tokens) && nullishCount(usage.completion_tokens))) return false;
  const choices = response.choices;
  if (!Array.isArray(choices)) return false;
  for (let i = 0; i < choices.length; i++) {
    if (!(i in choices)) return false; // a hole: leave it to zod
    const c: unknown = choices[i];
    if (!isObject(c) || !nullishCount(c.index) || !nullishString(c.finish_reason)) return false;
    if (chat) {
      const message = c.message;
      if (!isObject(message) || !nullishString(message.content)) return false;
    } else if (!nullishString(c.text)) return false;
  }
  return true;
}

type CheckedChoice = { index?: number | null; finish_reason?: string | null; message?: { content?: string | null }; text?: string | null };
type CheckedResponse = { model?: string | null; choices: CheckedChoice[]; usage?: { prompt_tokens?: number | null; completion_tokens?: number | null } | null };

function toRawResult(data: CheckedResponse, chat: boolean, defaultModel: string): RawResult {
  const choices = data.choices.length > 1 ? data.choices.slice().sort((a, b) => (a.index ?? 0) - (b.index ?? 0)) : data.choices;
  const samples: RawResult['samples'] = [];
  for (const c of choices) samples.push({ text: (chat ? c.message?.content : c.text) ?? '', finishReason: c.finish_reason ?? null });
  return {
    samples,
    promptTokens: data.usage?.prompt_tokens ?? 0,
    completionTokens: data.usage?.completion_tokens ?? 0,
    model: data.model ?? defaultModel,
  };
}

export function parseCompletionResponse(response: unknown, api: ApiMode, defaultModel: string): RawResult {
  const chat = api === 'chat';
  if (typeof response !== 'object' || response === null) {
    throw new ModelError(
      'bad_response',
      'the server answered with something that is not JSON; is the base URL an OpenAI-compatible API (usually ending in /v1)?',
    );
  }
  if (fastResponseCheck(response, chat)) return toRawResult(response as CheckedResponse, chat, defaultModel);
  if (chat) {
    const parsed = ChatResponseSchema.safeParse(response);
    if (!parsed.success)
      throw new ModelError(
        'bad_response',
        `the server's answer is not a chat completion: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
      );
    const choices = parsed.data.choices.slice().sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return {
      samples: choices.map((c) => ({ text: c.message.content ?? '', finishReason: c.finish_reason ?? null })),
      promptTokens: parsed.data.usage?.prompt_tokens ?? 0,
      completionTokens: parsed.data.usage?.completion_tokens ?? 0,
      model: parsed.data.model ?? defaultModel,
    };
  }
  const parsed = TextResponseSchema.safeParse(response);
  if (!parsed.success)
    throw new ModelError(
      'bad_response',
      `the server's answer is not a text completion: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
    );
  const choices = parsed.data.choices.slice().sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  return {
    samples: choices.map((c) => ({ text: c.text ?? '', finishReason: c.finish_reason ?? null })),
    promptTokens: parsed.data.usage?.prompt_tokens ?? 0,
    completionTokens: parsed.data.usage?.completion_tokens ?? 0,
    model: parsed.data.model ?? defaultModel,
  };
}
