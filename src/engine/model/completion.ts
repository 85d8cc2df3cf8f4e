// The shapes of one completion — the request a caller makes and what comes
// back — apart from the client, so batch files and the wire format use them
// without importing the client (no import cycle).
import type { z } from 'zod';
import type { Sampling } from './config';
import type { Prompt } from './prompt';

/** Ask for output that matches a zod schema (JSON-schema response format where the server has it). */
export interface OutputSchema<S extends z.ZodTypeAny = z.ZodTypeAny> {
  name: string;
  schema: S;
}

export interface CompletionRequest<S extends z.ZodTypeAny = z.ZodTypeAny> {
  prompt: Prompt;
  /** Samples wanted (k); defaults to the endpoint's n. */
  samples?: number;
  /** Overrides of the endpoint's sampling parameters for this call. */
  sampling?: Sampling;
  output?: OutputSchema<S>;
  /** The prompt template's name@version: part of the cache key. */
  templateVersion?: string;
  /** false: neither read nor write the cache for this call. */
  cache?: boolean;
  signal?: AbortSignal;
}

export interface Sample<T = unknown> {
  text: string;
  finishReason: string | null;
  /** With `output`: the validated value, or why the text did not yield one. */
  parsed?: { ok: true; value: T } | { ok: false; error: string };
}

export interface Completion<T = unknown> {
  samples: Sample<T>[];
  usage: { promptTokens: number; completionTokens: number };
  /** Whether the server produced the text under a JSON-schema response format. */
  structured: 'json_schema' | 'text';
  cached: boolean;
  model: string;
}

export type StreamEvent<T = unknown> = { type: 'delta'; sample: number; text: string } | { type: 'done'; completion: Completion<T> };
