// The model client: one OpenAI-compatible endpoint (vLLM, SGLang, Ollama,
// llama.cpp, LM Studio, OpenAI), chat or plain completions, k samples per
// call, structured output with a text fallback, a concurrency limit, retries
// with backoff that honour Retry-After, cancellation, streaming, a response
// cache and per-run accounting.
//
// The openai SDK drives streaming (SSE parsing, chunk types), model listing
// and the error classes; its own retries are off (maxRetries 0) because this
// client retries itself: every attempt then goes through the concurrency
// limit, is counted in the accounting, and gives its slot back while it waits,
// none of which the SDK's internal loop allows. Both run over our node:http
// transport (see transport.ts). Non-streaming requests — the bulk of a
// harvest or an evaluation — skip the SDK's per-request machinery (header
// merging, Response objects, debug formatting): measured against an instant
// local server it cost about half the throughput of a bare HTTP loop
// (bench/model.bench.ts), so they go straight to the transport with the same
// body, the same headers and the same error classes.
import OpenAI from 'openai';
import { z } from 'zod';
import { Accounting, type RunStats } from './accounting';
import type { BatchImport, BatchItem } from './batch';
import { cacheKey, type CacheEntry, type ResponseCache } from './cache';
import type { Completion, CompletionRequest, StreamEvent } from './completion';
import {
  describeEndpoint,
  endpointKey,
  parseEndpointConfig,
  redactSecrets,
  StreamRedactor,
  type EndpointConfig,
  type EndpointConfigInput,
  type Sampling,
} from './config';
import { ModelError } from './errors';
import { toJsonSchema } from './json-schema';
import { ConcurrencyLimiter } from './limiter';
import { backoffDelay, parseRetryAfter, sleep as realSleep } from './retry';
import { parseStructured } from './structured';
import { createTransport, ResponseTooLargeError, TransportTimeoutError, type Transport } from './transport';
import { buildRequestBody, ChatChunkSchema, parseCompletionResponse, TextChunkSchema, type RawResult } from './wire';

export type { Completion, CompletionRequest, OutputSchema, Sample, StreamEvent } from './completion';

export interface ClientDeps {
  /** The response cache; none by default (the CLI passes a DiskCache). */
  cache?: ResponseCache;
  /** Injected for tests: the backoff wait, jitter, and the latency clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

type Tristate = 'unknown' | 'yes' | 'no';

class TimeoutSignal extends Error {
  override name = 'TimeoutSignal';
}

export class ModelClient {
  /** The validated settings, without the API key. */
  readonly config: Readonly<Omit<EndpointConfig, 'apiKey'>>;
  /** "model @ endpoint": safe to print and to store. */
  readonly label: string;
  readonly accounting = new Accounting();
  readonly #apiKey: string | undefined;
  /** The key as answers are searched for it: keys under 8 characters ("EMPTY", "ollama") are words, not secrets. */
  readonly #echoKey: string | undefined;
  readonly #sdk: OpenAI;
  readonly #transport: Transport;
  readonly #limiter: ConcurrencyLimiter;
  readonly #cache: ResponseCache | undefined;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;
  /** Learned per endpoint: does it accept response_format json_schema, and does it honour n? */
  #jsonSchema: Tristate = 'unknown';
  #honoursN: Tristate = 'unknown';
  #streamUsage: Tristate = 'unknown';
  readonly #chatURL: URL;
  readonly #completionsURL: URL;
  readonly #headers: Record<string, string>;

  constructor(config: EndpointConfigInput | EndpointConfig, deps: ClientDeps = {}) {
    const { apiKey, ...rest } = parseEndpointConfig(config);
    this.config = Object.freeze(rest);
    this.#apiKey = apiKey || undefined;
    this.#echoKey = apiKey && apiKey.length >= 8 ? apiKey : undefined;
    this.label = describeEndpoint(rest);
    this.#transport = createTransport({ maxResponseBytes: rest.maxResponseBytes, maxSockets: Math.max(rest.concurrency, 8) });
    this.#limiter = new ConcurrencyLimiter(rest.concurrency);
    this.#cache = deps.cache;
    this.#sleep = deps.sleep ?? realSleep;
    this.#random = deps.random ?? Math.random;
    this.#now = deps.now ?? (() => performance.now());
    const base = rest.baseURL.replace(/\/+$/, '');
    this.#chatURL = new URL(`${base}/chat/completions`);
    this.#completionsURL = new URL(`${base}/completions`);
    this.#headers = { 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'execverify' };
    if (this.#apiKey) this.#headers.authorization = `Bearer ${this.#apiKey}`;
    const stripped: Record<string, null> = {
      'X-Stainless-Lang': null,
      'X-Stainless-Package-Version': null,
      'X-Stainless-OS': null,
      'X-Stainless-Arch': null,
      'X-Stainless-Runtime': null,
      'X-Stainless-Runtime-Version': null,
      'X-Stainless-Retry-Count': null,
      'X-Stainless-Timeout': null,
    };
    this.#sdk = new OpenAI({
      baseURL: rest.baseURL,
      // The SDK insists on a key; without one the Authorization header is removed below.
      apiKey: this.#apiKey ?? 'no-key',
      organization: null,
      project: null,
      maxRetries: 0,
      // Streams run under the client's own timers, which fire first; this is only a backstop.
      timeout: rest.timeoutMs + 5_000,
      fetch: this.#transport.fetch,
      logLevel: 'off',
      // Platform fingerprint headers are noise to a self-hosted server and cost time per request.
      defaultHeaders: this.#apiKey ? stripped : { ...stripped, Authorization: null },
    });
  }

  /** Never print the key, even by accident. */
  toJSON() {
    return { label: this.label, config: this.config };
  }

  stats(): RunStats {
    return this.accounting.snapshot();
  }

  /** The models the server lists (GET /v1/models): a cheap connectivity check. */
  async listModels(signal?: AbortSignal): Promise<string[]> {
    const page = await this.#attempt((options) => this.#sdk.models.list(options), undefined, signal);
    return z
      .object({ data: z.array(z.object({ id: z.string() })) })
      .parse({ data: page.data })
      .data.map((m) => m.id);
  }

  close(): void {
    this.#transport.close();
  }

  /** k samples for one prompt. Throws ModelError when the endpoint fails after all retries. */
  async complete<S extends z.ZodTypeAny = z.ZodTypeAny>(request: CompletionRequest<S>): Promise<Completion<z.infer<S>>> {
    this.accounting.call();
    try {
      return await this.#complete(request);
    } catch (err) {
      this.accounting.failure();
      throw err;
    }
  }

  async #complete<S extends z.ZodTypeAny>(request: CompletionRequest<S>): Promise<Completion<z.infer<S>>> {
    const k = request.samples ?? this.config.n;
    const sampling = this.#sampling(request.sampling);
    const key = this.#cacheKey(request, k, sampling);
    // No cache: no await (a promise and a turn of the event loop per call).
    const useCache = this.#cache !== undefined && request.cache !== false;
    const cached = useCache ? await this.#cached(key, request) : undefined;
    if (cached) return this.#finish(cached, request, true);

    let useSchema = this.#wantsSchema(request);
    let raw: RawResult;
    try {
      raw = await this.#gather(request, k, sampling, useSchema);
    } catch (err) {
      // A 400 while we do not yet know whether the server takes JSON-schema
      // output: retry once without it, and remember the answer if that works.
      if (!(
        useSchema &&
        this.#jsonSchema === 'unknown' &&
        this.config.structuredOutput === 'auto' &&
        err instanceof ModelError &&
        (err.code === 'bad_request' || err.details.status === 422)
      ))
        throw err;
      raw = await this.#gather(request, k, sampling, false);
      this.#jsonSchema = 'no';
      useSchema = false;
    }
    if (useSchema) this.#jsonSchema = 'yes';
    const entry: CacheEntry = {
      format: 'execverify.model-cache/1',
      key,
      model: raw.model,
      samples: raw.samples,
      usage: { promptTokens: raw.promptTokens, completionTokens: raw.completionTokens },
      structured: useSchema ? 'json_schema' : 'text',
      // Only a stored entry needs its date; formatting one costs on every call.
      createdAt: useCache ? new Date().toISOString() : '',
    };
    if (useCache) await this.#store(entry, request);
    return this.#finish(entry, request, false);
  }

  /**
   * Streams the answer for interactive use: `delta` events as text arrives
   * (sample = choice index), then one `done` event with the whole completion.
   * Breaking out of the loop or aborting the signal closes the HTTP request.
   * A failed attempt is retried only while nothing has been yielded yet.
   */
  async *stream<S extends z.ZodTypeAny = z.ZodTypeAny>(request: CompletionRequest<S>): AsyncGenerator<StreamEvent<z.infer<S>>, void, undefined> {
    this.accounting.call();
    try {
      const k = request.samples ?? this.config.n;
      const sampling = this.#sampling(request.sampling);
      const key = this.#cacheKey(request, k, sampling);
      const cached = await this.#cached(key, request);
      if (cached) {
        for (const [i, s] of cached.samples.entries()) yield { type: 'delta', sample: i, text: this.#redact(s.text) };
        yield { type: 'done', completion: this.#finish(cached, request, true) };
        return;
      }
      let useSchema = this.#wantsSchema(request);
      const chat = this.config.api === 'chat';
      const texts: string[] = [];
      const finish: (string | null)[] = [];
      let promptTokens = 0;
      let completionTokens = 0;
      let model = this.config.model;

      for (let retry = 0; ; retry++) {
        // Token usage in streams needs stream_options, which some older servers refuse (400).
        const usageOption = this.#streamUsage !== 'no' ? { stream_options: { include_usage: true } } : {};
        const body = this.#body(request, k, sampling, useSchema);
        let yielded = false;
        let finished = false;
        let failure: ModelError | undefined;
        // Per choice: the key a server echoes is cut out before a delta is yielded or kept.
        const redactors: (StreamRedactor | undefined)[] = [];
        const release = await this.#acquire(request.signal);
        const attempt = this.#attemptSignal(request.signal);
        this.accounting.request();
        const started = this.#now();
        try {
          attempt.arm(this.config.timeoutMs);
          const options = { signal: attempt.signal };
          const stream = chat
            ? await this.#sdk.chat.completions.create(
                { ...(body as object), stream: true, ...usageOption } as unknown as OpenAI.ChatCompletionCreateParamsStreaming,
                options,
              )
            : await this.#sdk.completions.create(
                { ...(body as object), stream: true, ...usageOption } as unknown as OpenAI.CompletionCreateParamsStreaming,
                options,
              );
          attempt.arm(this.config.streamIdleMs);
          for await (const rawChunk of stream as AsyncIterable<unknown>) {
            attempt.arm(this.config.streamIdleMs);
            const chunk = (chat ? ChatChunkSchema : TextChunkSchema).safeParse(rawChunk);
            if (!chunk.success)
              throw new ModelError('bad_response', `the server sent a stream chunk that is not a completion chunk: ${chunk.error.issues[0]?.message ?? ''}`);
            if (chunk.data.usage) {
              promptTokens = chunk.data.usage.prompt_tokens ?? promptTokens;
              completionTokens = chunk.data.usage.completion_tokens ?? completionTokens;
            }
            const m = (rawChunk as { model?: unknown }).model;
            if (typeof m === 'string') model = this.#redact(m);
            for (const choice of chunk.data.choices ?? []) {
              const index = choice.index ?? 0;
              if (index >= k) continue;
              const text = 'delta' in choice ? (choice.delta?.content ?? '') : ((choice as { text?: string | null }).text ?? '');
              if (choice.finish_reason) finish[index] = choice.finish_reason;
              if (!text) continue;
              const safe = this.#echoKey ? (redactors[index] ??= new StreamRedactor(this.#echoKey)).push(text) : text;
              if (!safe) continue;
              texts[index] = (texts[index] ?? '') + safe;
              yielded = true;
              yield { type: 'delta', sample: index, text: safe };
            }
          }
          for (const [index, redactor] of redactors.entries()) {
            const rest = redactor?.flush();
            if (!rest) continue;
            texts[index] = (texts[index] ?? '') + rest;
            yielded = true;
            yield { type: 'delta', sample: index, text: rest };
          }
          this.accounting.latency(this.#now() - started);
          finished = true;
        } catch (err) {
          failure = this.#classify(err, request.signal, attempt.timedOut);
        } finally {
          attempt.dispose(finished);
          release();
        }
        if (!failure) {
          if (this.#streamUsage === 'unknown' && 'stream_options' in usageOption) this.#streamUsage = 'yes';
          if (useSchema) this.#jsonSchema = 'yes';
          break;
        }
        // A refusal (400) of an optional feature we have not yet seen accepted: drop it, retry, remember.
        if (!yielded && failure.code === 'bad_request') {
          const canDropUsage = this.#streamUsage === 'unknown' && 'stream_options' in usageOption;
          const canDropSchema = useSchema && this.#jsonSchema === 'unknown' && this.config.structuredOutput === 'auto';
          // Which one the server refused, if its message says; otherwise the schema first (more often missing).
          const blamesUsage = /stream_options|include_usage/i.test(failure.message);
          if (canDropUsage && (blamesUsage || !canDropSchema)) {
            this.#streamUsage = 'no';
            retry--;
            continue;
          }
          if (canDropSchema) {
            this.#jsonSchema = 'no';
            useSchema = false;
            retry--;
            continue;
          }
        }
        if (yielded || !failure.retryable || retry >= this.config.retries) throw failure;
        await this.#backoff(failure, retry, request.signal);
      }
      this.accounting.tokens(promptTokens, completionTokens);
      const entry: CacheEntry = {
        format: 'execverify.model-cache/1',
        key,
        model,
        samples: Array.from({ length: Math.max(1, texts.length) }, (_, i) => ({ text: texts[i] ?? '', finishReason: finish[i] ?? null })),
        usage: { promptTokens, completionTokens },
        structured: useSchema ? 'json_schema' : 'text',
        createdAt: new Date().toISOString(),
      };
      await this.#store(entry, request);
      yield { type: 'done', completion: this.#finish(entry, request, false) };
    } catch (err) {
      this.accounting.failure();
      throw err;
    }
  }

  /**
   * Stores imported batch results in the response cache under the keys the
   * same online requests would have, so a harvest or evaluation run after an
   * offline batch costs no requests. `items` are the ones the batch file was
   * written from (with this client's settings). Returns how many were stored.
   */
  async storeBatchResults(items: readonly BatchItem[], imported: BatchImport): Promise<number> {
    if (!this.#cache) return 0;
    let stored = 0;
    for (const item of items) {
      const result = imported.results.get(item.customId);
      if (!result) continue;
      const request: CompletionRequest = { ...item.request };
      const k = request.samples ?? this.config.n;
      if (result.samples.length < k) continue; // a server that ignored n: not the answer an online call gives
      const sampling = this.#sampling(request.sampling);
      await this.#cache.put({
        format: 'execverify.model-cache/1',
        key: this.#cacheKey(request, k, sampling),
        model: result.model || this.config.model,
        samples: result.samples.slice(0, k).map((s) => ({ text: this.#redact(s.text), finishReason: s.finishReason })),
        usage: result.usage,
        structured: request.output && this.config.structuredOutput !== 'off' ? 'json_schema' : 'text',
        createdAt: new Date().toISOString(),
      });
      stored++;
    }
    return stored;
  }

  // ---- samples -----------------------------------------------------------

  /** k samples: one request with n = k, topped up with single requests when the server gives fewer. */
  async #gather(request: CompletionRequest, k: number, sampling: Sampling, useSchema: boolean): Promise<RawResult> {
    const result: RawResult = { samples: [], promptTokens: 0, completionTokens: 0, model: this.config.model };
    if (k === 1 || this.#honoursN !== 'no') {
      const first = await this.#request(this.#body(request, k, sampling, useSchema), request.signal);
      if (k > 1 && this.#honoursN === 'unknown') this.#honoursN = first.samples.length >= k ? 'yes' : 'no';
      if (first.samples.length > k) first.samples = first.samples.slice(0, k);
      // The common case (the server gave all k): that result is the answer.
      if (first.samples.length === k) return first;
      addResult(result, first, true);
    }
    const missing = k - result.samples.length;
    if (missing > 0) {
      // Repeated requests with the same seed would repeat the same sample.
      const offset = result.samples.length;
      const more = await Promise.all(
        Array.from({ length: missing }, (_, i) =>
          this.#request(
            this.#body(request, 1, { ...sampling, seed: sampling.seed === undefined ? undefined : sampling.seed + offset + i }, useSchema),
            request.signal,
          ),
        ),
      );
      more.forEach((r, i) => addResult(result, { ...r, samples: r.samples.slice(0, 1) }, result.samples.length === 0 && i === 0));
    }
    return result;
  }

  #request(body: Record<string, unknown>, signal: AbortSignal | undefined): Promise<RawResult> {
    // The body is serialised once, not once per attempt.
    return this.#attempt(this.#exchange, JSON.stringify(body), signal);
  }

  /** One non-streaming HTTP exchange (created once per client: no closure per request). */
  readonly #exchange = async (options: { signal?: AbortSignal; timeout: number }, json: string): Promise<RawResult> => {
    const chat = this.config.api === 'chat';
    const url = chat ? this.#chatURL : this.#completionsURL;
    const exchange = await this.#transport.postJson(url, json, this.#headers, { signal: options.signal, timeoutMs: options.timeout });
    if (exchange.status < 200 || exchange.status >= 300) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(exchange.text);
      } catch {
        parsed = undefined;
      }
      throw OpenAI.APIError.generate(
        exchange.status,
        parsed as object | undefined,
        parsed === undefined ? exchange.text.slice(0, 500) : undefined,
        exchange.headers as unknown as Headers,
      );
    }
    // A SyntaxError here is classified as a malformed (retryable) answer.
    const result = this.#redacted(parseCompletionResponse(JSON.parse(exchange.text) as unknown, chat ? 'chat' : 'completions', this.config.model));
    // Tokens of successful attempts only, as they are read.
    this.accounting.tokens(result.promptTokens, result.completionTokens);
    return result;
  };

  // ---- attempts, retries, timeouts ---------------------------------------

  /**
   * Runs one HTTP exchange with the limit, the timeout and the retry policy.
   * The transport resolves fetch only once the whole body has arrived, so the
   * SDK's own per-request timeout covers the complete exchange here; `run`
   * gets the options to pass on (the caller's signal and that timeout).
   */
  async #attempt<T, A>(run: (options: { signal?: AbortSignal; timeout: number }, arg: A) => Promise<T>, arg: A, signal: AbortSignal | undefined): Promise<T> {
    const options = signal ? { signal, timeout: this.config.timeoutMs } : { timeout: this.config.timeoutMs };
    for (let retry = 0; ; retry++) {
      let failure: ModelError;
      // A free slot is taken without another promise; otherwise wait in the queue.
      const release = (!signal?.aborted && this.#limiter.tryAcquire()) || (await this.#acquire(signal));
      this.accounting.request();
      const started = this.#now();
      try {
        const value = await run(options, arg);
        this.accounting.latency(this.#now() - started);
        return value;
      } catch (err) {
        failure = this.#classify(err, signal, false);
      } finally {
        release();
      }
      if (!failure.retryable || retry >= this.config.retries) throw failure;
      await this.#backoff(failure, retry, signal);
    }
  }

  async #acquire(signal: AbortSignal | undefined): Promise<() => void> {
    try {
      return await this.#limiter.acquire(signal);
    } catch {
      throw new ModelError('aborted', 'the request was cancelled');
    }
  }

  async #backoff(failure: ModelError, retry: number, signal: AbortSignal | undefined): Promise<void> {
    const requested = failure.details.retryAfterMs;
    if (requested !== undefined && requested > this.config.maxRetryAfterMs) {
      throw new ModelError(
        failure.code,
        `${failure.message}; the server asks to wait ${Math.ceil(requested / 1000)} s, longer than the ${Math.ceil(this.config.maxRetryAfterMs / 1000)} s allowed (maxRetryAfterMs)`,
        failure.details,
      );
    }
    const wait = requested ?? backoffDelay(retry, this.config.backoffMs, this.config.maxBackoffMs, this.#random);
    this.accounting.retry();
    try {
      await this.#sleep(wait, signal);
    } catch {
      throw new ModelError('aborted', 'the request was cancelled');
    }
  }

  /** An AbortSignal for one attempt: follows the caller's signal and fires on timeout. */
  #attemptSignal(parent: AbortSignal | undefined) {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const state = { timedOut: false };
    const onParent = () => controller.abort(parent!.reason);
    if (parent?.aborted) controller.abort(parent.reason);
    else parent?.addEventListener('abort', onParent, { once: true });
    return {
      signal: controller.signal,
      get timedOut() {
        return state.timedOut;
      },
      /** (Re)starts the countdown. */
      arm(ms: number) {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          state.timedOut = true;
          controller.abort(new TimeoutSignal(`no answer within ${ms} ms`));
        }, ms);
      },
      /** `finished`: the stream ended normally; otherwise the request is aborted (the caller stopped reading). */
      dispose(finished: boolean) {
        if (timer) clearTimeout(timer);
        parent?.removeEventListener('abort', onParent);
        if (!finished && !controller.signal.aborted) controller.abort();
      },
    };
  }

  /** Any failure → a ModelError with a code, a retry decision and a redacted, actionable message. */
  #classify(err: unknown, signal: AbortSignal | undefined, timedOut: boolean): ModelError {
    const e = this.#classifyRaw(err, signal, timedOut);
    const message = redactSecrets(e.message, [this.#apiKey]);
    return message === e.message ? e : new ModelError(e.code, message, e.details);
  }

  #classifyRaw(err: unknown, signal: AbortSignal | undefined, timedOut: boolean): ModelError {
    const where = endpointKey(this.config.baseURL);
    if (signal?.aborted) return new ModelError('aborted', 'the request was cancelled');
    if (timedOut)
      return new ModelError(
        'timeout',
        `${where} did not answer in time (timeoutMs ${this.config.timeoutMs}, streamIdleMs ${this.config.streamIdleMs}); a busy server may need a longer timeout or a lower concurrency`,
      );
    if (err instanceof ModelError) return err;
    const tooLarge = findCause(err, (c) => c instanceof ResponseTooLargeError);
    if (tooLarge)
      return new ModelError('too_large', `${where} sent more than ${this.config.maxResponseBytes} bytes; lower maxTokens or raise maxResponseBytes`);
    if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
      const status = err.status;
      const retryAfterMs = parseRetryAfter(err.headers ?? undefined, Date.now());
      const detail = err.message.replace(/^\d{3}\s*/, '').slice(0, 500);
      const details = { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
      if (status === 429) return new ModelError('rate_limited', `${where} is rate limiting (429): ${detail}`, details);
      if (status === 408) return new ModelError('timeout', `${where} timed out the request (408)`, details);
      if (status === 409 || status >= 500) return new ModelError('server_error', `${where} failed (${status}): ${detail}`, details);
      if (status === 401 || status === 403)
        return new ModelError(
          'auth',
          `${where} refused the credentials (${status}): ${detail}; set EXECVERIFY_API_KEY (or OPENAI_API_KEY) or the key in the editor's settings`,
          details,
        );
      if (status === 404)
        return new ModelError(
          'not_found',
          `${where} has no such route or model (404): ${detail}; check the base URL (usually ends in /v1) and the model name (GET /v1/models lists them)`,
          details,
        );
      return new ModelError('bad_request', `${where} rejected the request (${status}): ${detail}`, details);
    }
    if (err instanceof TransportTimeoutError || err instanceof OpenAI.APIConnectionTimeoutError)
      return new ModelError(
        'timeout',
        `${where} did not answer within ${this.config.timeoutMs} ms; a busy server may need a longer timeoutMs or a lower concurrency`,
      );
    if (err instanceof SyntaxError || findCause(err, (c) => c instanceof SyntaxError)) {
      return new ModelError('bad_response', `${where} sent malformed JSON (${(err as Error).message.slice(0, 200)})`);
    }
    if (err instanceof OpenAI.APIConnectionError || err instanceof Error) {
      const cause = findCause(err, (c) => typeof (c as { code?: unknown }).code === 'string') as { code?: string } | undefined;
      const code = cause?.code ?? '';
      const refused = code === 'ECONNREFUSED';
      return new ModelError(
        'connection',
        refused
          ? `cannot connect to ${where} (connection refused): is the server running? See docs/model-endpoints.md`
          : `the connection to ${where} failed${code ? ` (${code})` : ''}: ${describeError(err)}`,
      );
    }
    return new ModelError('connection', `the request to ${where} failed: ${String(err)}`);
  }

  // ---- request bodies, cache ---------------------------------------------

  #sampling(overrides: Sampling | undefined): Sampling {
    const c = this.config;
    const base = { temperature: c.temperature, topP: c.topP, maxTokens: c.maxTokens, seed: c.seed, stop: c.stop };
    return overrides ? { ...base, ...stripUndefined(overrides) } : base;
  }

  #wantsSchema(request: CompletionRequest): boolean {
    if (!request.output || this.config.structuredOutput === 'off') return false;
    if (this.config.structuredOutput === 'json_schema') return true;
    return this.#jsonSchema !== 'no';
  }

  #body(request: CompletionRequest, n: number, sampling: Sampling, useSchema: boolean): Record<string, unknown> {
    return buildRequestBody(this.config, request, n, sampling, useSchema);
  }

  #cacheKey(request: CompletionRequest, k: number, sampling: Sampling): string {
    // Hashing the prompt costs more than a local round trip; skip it when nothing is cached.
    if (!this.#cache || request.cache === false) return '';
    return cacheKey({
      endpoint: endpointKey(this.config.baseURL),
      model: this.config.model,
      api: this.config.api,
      prompt: request.prompt,
      parameters: { ...sampling, n: k, output: request.output ? { name: request.output.name, schema: toJsonSchema(request.output.schema) } : undefined },
      templateVersion: request.templateVersion,
    });
  }

  async #cached(key: string, request: CompletionRequest): Promise<CacheEntry | undefined> {
    if (!this.#cache || request.cache === false) return undefined;
    const entry = await this.#cache.get(key).catch(() => undefined);
    if (entry) this.accounting.cacheHit();
    return entry;
  }

  async #store(entry: CacheEntry, request: CompletionRequest): Promise<void> {
    if (!this.#cache || request.cache === false) return;
    // A cache that cannot be written (full disk, read-only dir) must not lose the answer.
    await this.#cache.put(entry).catch(() => undefined);
  }

  #finish<S extends z.ZodTypeAny>(entry: CacheEntry, request: CompletionRequest<S>, cached: boolean): Completion<z.infer<S>> {
    const output = request.output;
    // Answers come from the network or the cache: a cache written before the key was redacted still shows none.
    const samples = cached && this.#echoKey ? entry.samples.map((s) => ({ ...s, text: this.#redact(s.text) })) : entry.samples;
    return {
      samples: samples.map((s) => (output ? { ...s, parsed: parseStructured(s.text, output.schema) } : { ...s })),
      usage: entry.usage,
      structured: entry.structured,
      cached,
      model: cached ? this.#redact(entry.model) : entry.model,
    };
  }

  // ---- the key a server echoes -------------------------------------------

  /**
   * A server may echo the Authorization header it got (a debugging proxy, a
   * hostile endpoint): the key is cut out of every answer before it is
   * cached, parsed, shown or stored.
   */
  #redact(text: string): string {
    return this.#echoKey && text.includes(this.#echoKey) ? redactSecrets(text, [this.#echoKey]) : text;
  }

  #redacted(result: RawResult): RawResult {
    if (!this.#echoKey) return result;
    for (const sample of result.samples) sample.text = this.#redact(sample.text);
    result.model = this.#redact(result.model);
    return result;
  }
}

/** Adds one request's result to the samples gathered so far. */
function addResult(result: RawResult, r: RawResult, first: boolean): void {
  result.samples.push(...r.samples);
  // Every request pays for the prompt again; count it each time.
  result.promptTokens += r.promptTokens;
  result.completionTokens += r.completionTokens;
  if (first) result.model = r.model;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function findCause(err: unknown, test: (e: object) => boolean): object | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && current && typeof current === 'object'; depth++) {
    if (test(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function describeError(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current.message && !parts.includes(current.message)) parts.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(': ').slice(0, 300) || String(err);
}
