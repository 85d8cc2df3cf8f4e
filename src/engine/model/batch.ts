// Batch files: the offline path for datasets too large for online requests.
// Requests are written in the OpenAI Batch API JSONL format
// ({custom_id, method, url, body} per line), which vLLM's batch runner
// (`python -m vllm.entrypoints.openai.run_batch`) also reads; result files are
// imported and matched back by custom_id. A bad result line is reported with
// its line number and never stops the import.
import { promises as fs } from 'node:fs';
import { z } from 'zod';
import type { CompletionRequest, Completion } from './completion';
import { EndpointConfigSchema, type EndpointConfig, type EndpointConfigInput, type Sampling } from './config';
import { ModelError } from './errors';
import { parseStructured } from './structured';
import { buildRequestBody, parseCompletionResponse } from './wire';

export interface BatchItem {
  /** Unique within the file; how results find their question set again. */
  customId: string;
  /** templateVersion is not sent; it keys the answers when they are stored in the cache. */
  request: Pick<CompletionRequest, 'prompt' | 'samples' | 'sampling' | 'output' | 'templateVersion'>;
}

export const BatchRequestLineSchema = z.object({
  custom_id: z.string().min(1),
  method: z.literal('POST'),
  url: z.enum(['/v1/chat/completions', '/v1/completions']),
  body: z.record(z.unknown()),
});
export type BatchRequestLine = z.infer<typeof BatchRequestLineSchema>;

/** One line of a result file (OpenAI and vLLM write the same shape). */
export const BatchResultLineSchema = z.object({
  id: z.string().nullish(),
  custom_id: z.string().min(1),
  response: z
    .object({
      status_code: z.number().int(),
      request_id: z.string().nullish(),
      body: z.unknown(),
    })
    .nullish(),
  error: z.object({ code: z.string().nullish(), message: z.string().nullish() }).passthrough().nullish(),
});

export interface BatchLineError {
  /** 1-based line in the result file. */
  line: number;
  customId?: string;
  message: string;
}

export interface BatchImport {
  results: Map<string, Completion>;
  errors: BatchLineError[];
  /** custom_ids that were expected but have no line in the file. */
  missing: string[];
}

type BatchConfig = Pick<EndpointConfig, 'model' | 'api' | 'n' | 'structuredOutput'> & Sampling;

/** Batch files need no reachable server: only the model, the API and the sampling settings matter. */
export type BatchSettings = Omit<EndpointConfigInput, 'baseURL' | 'apiKey'> & { baseURL?: string; apiKey?: string };

function batchConfig(config: BatchSettings | EndpointConfig): BatchConfig {
  return EndpointConfigSchema.parse({ ...config, baseURL: config.baseURL ?? 'http://batch.invalid/v1', apiKey: undefined });
}

/** The request lines for `items`, in order. Throws on a duplicate custom_id. */
export function batchRequestLines(config: BatchSettings | EndpointConfig, items: readonly BatchItem[]): BatchRequestLine[] {
  const c = batchConfig(config);
  const seen = new Set<string>();
  const url = c.api === 'chat' ? '/v1/chat/completions' : '/v1/completions';
  return items.map((item) => {
    if (seen.has(item.customId)) throw new Error(`duplicate custom_id '${item.customId}' in the batch: every request needs its own id`);
    seen.add(item.customId);
    const sampling: Sampling = {
      temperature: c.temperature,
      topP: c.topP,
      maxTokens: c.maxTokens,
      seed: c.seed,
      stop: c.stop,
      ...Object.fromEntries(Object.entries(item.request.sampling ?? {}).filter(([, v]) => v !== undefined)),
    };
    const useSchema = Boolean(item.request.output) && c.structuredOutput !== 'off';
    const body = buildRequestBody(c, item.request, item.request.samples ?? c.n, sampling, useSchema);
    return { custom_id: item.customId, method: 'POST', url, body };
  });
}

/** Writes the JSONL request file; returns the number of lines. */
export async function writeBatchFile(file: string, config: BatchSettings | EndpointConfig, items: readonly BatchItem[]): Promise<number> {
  const lines = batchRequestLines(config, items);
  const temp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temp, lines.map((l) => JSON.stringify(l)).join('\n') + (lines.length ? '\n' : ''));
  await fs.rename(temp, file);
  return lines.length;
}

/**
 * Reads a result file's text. `api` says which response shape to expect;
 * `expected` (the custom_ids that were sent) lets the import report unknown
 * and missing ids; `outputs` re-validates structured answers per custom_id.
 */
export function parseBatchResults(
  text: string,
  options: { api: 'chat' | 'completions'; model?: string; expected?: Iterable<string>; outputs?: ReadonlyMap<string, BatchItem['request']['output']> },
): BatchImport {
  const results = new Map<string, Completion>();
  const errors: BatchLineError[] = [];
  const expected = options.expected ? new Set(options.expected) : undefined;
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = i + 1;
    if (!raw.trim()) continue;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      errors.push({ line, message: 'not a JSON line' });
      continue;
    }
    const parsed = BatchResultLineSchema.safeParse(json);
    if (!parsed.success) {
      errors.push({ line, message: `not a batch result line: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}` });
      continue;
    }
    const { custom_id: customId, response, error } = parsed.data;
    if (expected && !expected.has(customId)) {
      errors.push({ line, customId, message: 'unknown custom_id (not in this batch)' });
      continue;
    }
    if (results.has(customId)) {
      errors.push({ line, customId, message: 'duplicate custom_id; the first result is kept' });
      continue;
    }
    if (error) {
      errors.push({ line, customId, message: `the request failed: ${error.code ?? 'error'}: ${error.message ?? ''}`.trim() });
      continue;
    }
    if (!response) {
      errors.push({ line, customId, message: 'no response and no error' });
      continue;
    }
    if (response.status_code !== 200) {
      const message = (response.body as { error?: { message?: unknown } } | undefined)?.error?.message;
      errors.push({ line, customId, message: `status ${response.status_code}${typeof message === 'string' ? `: ${message}` : ''}` });
      continue;
    }
    let rawResult;
    try {
      rawResult = parseCompletionResponse(response.body, options.api, options.model ?? '');
    } catch (err) {
      errors.push({ line, customId, message: err instanceof ModelError ? err.message : String(err) });
      continue;
    }
    const output = options.outputs?.get(customId);
    results.set(customId, {
      samples: rawResult.samples.map((s) => (output ? { ...s, parsed: parseStructured(s.text, output.schema) } : { ...s })),
      usage: { promptTokens: rawResult.promptTokens, completionTokens: rawResult.completionTokens },
      structured: 'text',
      cached: false,
      model: rawResult.model,
    });
  }
  const missing = expected ? [...expected].filter((id) => !results.has(id) && !errors.some((e) => e.customId === id)) : [];
  return { results, errors, missing };
}

export async function readBatchResults(file: string, options: Parameters<typeof parseBatchResults>[1]): Promise<BatchImport> {
  return parseBatchResults(await fs.readFile(file, 'utf8'), options);
}
