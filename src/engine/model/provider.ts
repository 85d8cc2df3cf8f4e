// The Provider: what the editor, the CLI and harvesting call to get answers to
// one rendered question set, whether a model behind an endpoint answers or the
// trivial baseline does. Both reply with raw text in the template's answer
// format, so the same parser and the same judge score them; `info.kind` keeps
// a baseline from ever being reported as a model.
import type { z } from 'zod';
import type { RunStats } from './accounting';
import { NextStepAnswerSchema, type AnswerFormat } from './answers';
import { ModelClient, type ClientDeps, type StreamEvent } from './client';
import type { EndpointConfig, EndpointConfigInput } from './config';
import type { Prompt } from './prompt';

export interface ProviderInfo {
  kind: 'model' | 'baseline';
  /** "baseline", or "model @ endpoint" — safe to print and to store in datasets. */
  label: string;
}

/**
 * What the baseline needs to answer a question without a model (the facts a
 * model must infer). A model provider ignores these; build them with
 * `baselineQuestion` from a decoded trace.
 */
export type BaselineQuestion =
  | { kind: 'next_line'; /** The line below L in the source (the trivial guess); line -1 when there is none. */ following: { line: number; text: string } }
  | { kind: 'state' | 'state_any'; var: string; /** v just before L ran; null when v did not exist yet. */ before: { repr: string; type: string } | null }
  | { kind: 'output' }
  | { kind: 'input' }
  | { kind: 'coverage' };

export interface AnswerRequest {
  /** The rendered prompt (src/engine/model/templates). */
  prompt: Prompt;
  /** How the reply writes its answers: picks the parser, and the baseline's output shape. */
  format: AnswerFormat;
  /** The questions in prompt order. */
  questions: readonly BaselineQuestion[];
  /** k samples (for pass@k); default the provider's. */
  samples?: number;
  /** The template's name@version: part of the response cache key. */
  templateVersion?: string;
  /** The template's stop sequences (text-completion templates stop at their closing tag). */
  stop?: string[];
  /** The answer is the next-step JSON: constrain it with its schema where the server can. */
  structured?: boolean;
  signal?: AbortSignal;
}

export interface ProviderReply {
  provider: ProviderInfo;
  /** Raw texts, one per sample; engine/ask's parseReply reads them (parseAnswers / parseNextStep by format). */
  samples: { text: string; finishReason: string | null }[];
  usage: { promptTokens: number; completionTokens: number };
  cached: boolean;
}

export interface Provider {
  readonly info: ProviderInfo;
  answer(request: AnswerRequest): Promise<ProviderReply>;
  /** Interactive use: text as it arrives, then the whole reply. */
  stream(request: AnswerRequest): AsyncIterable<StreamEvent>;
  stats(): RunStats;
  close(): void;
}

/** A model behind an OpenAI-compatible endpoint. */
export class ModelProvider implements Provider {
  readonly info: ProviderInfo;
  readonly client: ModelClient;

  constructor(config: EndpointConfigInput | EndpointConfig | ModelClient, deps: ClientDeps = {}) {
    this.client = config instanceof ModelClient ? config : new ModelClient(config, deps);
    this.info = { kind: 'model', label: this.client.label };
  }

  async answer(request: AnswerRequest): Promise<ProviderReply> {
    const completion = await this.client.complete(this.#request(request));
    return {
      provider: this.info,
      samples: completion.samples.map((s) => ({ text: s.text, finishReason: s.finishReason })),
      usage: completion.usage,
      cached: completion.cached,
    };
  }

  stream(request: AnswerRequest): AsyncIterable<StreamEvent> {
    return this.client.stream(this.#request(request));
  }

  stats(): RunStats {
    return this.client.stats();
  }

  close(): void {
    this.client.close();
  }

  #request(request: AnswerRequest) {
    // The interactive JSON format is constrained by its schema where the server can.
    const output: { name: string; schema: z.ZodTypeAny } | undefined =
      request.structured || request.format === 'next_step_json' ? { name: 'next_step', schema: NextStepAnswerSchema } : undefined;
    return {
      prompt: request.prompt,
      samples: request.samples,
      templateVersion: request.templateVersion,
      signal: request.signal,
      ...(request.stop ? { sampling: { stop: request.stop } } : {}),
      ...(output ? { output } : {}),
    };
  }
}
