// The model client against a real OpenAI-compatible HTTP server on 127.0.0.1:
// protocol coverage, failure handling, cancellation, limits and accounting.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import { ModelClient, type ClientDeps, type StreamEvent } from '../../src/engine/model/client';
import type { EndpointConfigInput } from '../../src/engine/model/config';
import { ModelError } from '../../src/engine/model/errors';
import { chatPrompt, textPrompt } from '../../src/engine/model/prompt';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

let server: OpenAIServer;
before(async () => {
  server = await startOpenAIServer();
});
after(async () => {
  await server.close();
});

/** No real waiting between retries: record the requested delays instead. */
function recordingSleep() {
  const waits: number[] = [];
  const sleep: NonNullable<ClientDeps['sleep']> = async (ms) => {
    waits.push(ms);
  };
  return { waits, sleep };
}

function client(config: Partial<EndpointConfigInput> = {}, deps: ClientDeps = {}) {
  return new ModelClient({ baseURL: server.url, model: 'test-model', ...config }, { sleep: recordingSleep().sleep, ...deps });
}

const ask = chatPrompt([{ role: 'user', content: 'What does f(2) return?' }]);

async function rejection(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ModelError, `expected a ModelError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

test('a chat completion returns the text and the server-reported usage', async () => {
  server.setScript(() => ({ text: 'It returns 4' }));
  server.resetStats();
  const c = client();
  const result = await c.complete({ prompt: ask });
  assert.deepEqual(
    result.samples.map((s) => s.text),
    ['It returns 4'],
  );
  assert.equal(result.samples[0]!.finishReason, 'stop');
  assert.equal(server.requests[0]!.path, '/v1/chat/completions');
  assert.deepEqual(server.requests[0]!.body!.messages, [{ role: 'user', content: 'What does f(2) return?' }]);
  assert.deepEqual(result.usage, { promptTokens: 4, completionTokens: 3 }); // the test server counts words
  c.close();
});

test('plain completions mode sends a text prompt to /v1/completions', async () => {
  server.setScript((req) => ({ text: `echo:${String(req.body!.prompt)}` }));
  server.resetStats();
  const c = client({ api: 'completions' });
  const result = await c.complete({ prompt: textPrompt('<|im_start|>user\nf(2)?') });
  assert.equal(server.requests[0]!.path, '/v1/completions');
  assert.equal(result.samples[0]!.text, 'echo:<|im_start|>user\nf(2)?');
  c.close();
});

test('sampling parameters reach the server under their OpenAI names', async () => {
  server.setScript(undefined);
  server.resetStats();
  const c = client({ temperature: 0.7, topP: 0.9, maxTokens: 64, seed: 11, stop: ['</answer>'] });
  await c.complete({ prompt: ask, sampling: { temperature: 0 } });
  const body = server.requests[0]!.body!;
  assert.equal(body.temperature, 0);
  assert.equal(body.top_p, 0.9);
  assert.equal(body.max_tokens, 64);
  assert.equal(body.seed, 11);
  assert.deepEqual(body.stop, ['</answer>']);
  c.close();
});

test('k samples come from one request with n = k when the server honours n', async () => {
  server.setScript(() => ({ text: ['a', 'b', 'c'] }));
  server.resetStats();
  const c = client();
  const result = await c.complete({ prompt: ask, samples: 3 });
  assert.deepEqual(
    result.samples.map((s) => s.text),
    ['a', 'b', 'c'],
  );
  assert.equal(server.stats.requests, 1);
  assert.equal(server.requests[0]!.body!.n, 3);
  c.close();
});

test('k samples are topped up with separate requests, each with its own seed, when the server ignores n', async () => {
  let i = 0;
  server.setScript(() => ({ text: `s${i++}`, choices: 1 }));
  server.resetStats();
  const c = client({ seed: 100 });
  const first = await c.complete({ prompt: ask, samples: 3 });
  assert.equal(first.samples.length, 3);
  assert.equal(new Set(first.samples.map((s) => s.text)).size, 3);
  const seeds = server.requests.map((r) => r.body!.seed);
  assert.equal(new Set(seeds).size, 3, `seeds should differ, got ${seeds.join(',')}`);
  // Learned: the next call does not ask for n at all.
  server.resetStats();
  const second = await c.complete({ prompt: ask, samples: 2 });
  assert.equal(second.samples.length, 2);
  assert.ok(server.requests.every((r) => r.body!.n === undefined));
  c.close();
});

test('SSE streaming yields deltas that add up to the answer, then the completion with usage', async () => {
  server.setScript(() => ({ text: 'line 7 runs next', chunkChars: 3 }));
  const c = client();
  const events = await collect(c.stream({ prompt: ask }));
  const deltas = events.filter((e) => e.type === 'delta');
  assert.ok(deltas.length >= 5, 'the text arrives in several chunks');
  assert.equal(deltas.map((d) => (d.type === 'delta' ? d.text : '')).join(''), 'line 7 runs next');
  const done = events.at(-1)!;
  assert.equal(done.type, 'done');
  if (done.type === 'done') {
    assert.equal(done.completion.samples[0]!.text, 'line 7 runs next');
    assert.equal(done.completion.usage.completionTokens, 4);
  }
  c.close();
});

test('streaming works for plain completions too', async () => {
  server.setScript(() => ({ text: 'return 4', chunkChars: 2 }));
  const c = client({ api: 'completions' });
  const events = await collect(c.stream({ prompt: textPrompt('f(2) ==') }));
  const done = events.at(-1)!;
  assert.ok(done.type === 'done' && done.completion.samples[0]!.text === 'return 4');
  c.close();
});

const Answer = z.object({ next_line: z.number().int(), value: z.string() });

test('structured output asks for a JSON schema built from the zod schema and validates the answer', async () => {
  server.setScript(() => ({ text: '{"next_line": 7, "value": "[1, 2]"}' }));
  server.resetStats();
  const c = client();
  const result = await c.complete({ prompt: ask, output: { name: 'answer', schema: Answer } });
  const format = server.requests[0]!.body!.response_format as { type: string; json_schema: { name: string; schema: Record<string, unknown> } };
  assert.equal(format.type, 'json_schema');
  assert.equal(format.json_schema.name, 'answer');
  assert.deepEqual(format.json_schema.schema.required, ['next_line', 'value']);
  assert.deepEqual(result.samples[0]!.parsed, { ok: true, value: { next_line: 7, value: '[1, 2]' } });
  assert.equal(result.structured, 'json_schema');
  c.close();
});

test('a server that rejects JSON-schema output gets text requests from then on, and the text is still parsed', async () => {
  const strict = await startOpenAIServer({ rejectJsonSchema: true, script: () => ({ text: 'Sure! ```json\n{"next_line": 3, "value": "5"}\n```' }) });
  const c = new ModelClient({ baseURL: strict.url, model: 'm' });
  const first = await c.complete({ prompt: ask, output: { name: 'answer', schema: Answer } });
  assert.equal(first.structured, 'text');
  assert.deepEqual(first.samples[0]!.parsed, { ok: true, value: { next_line: 3, value: '5' } });
  assert.equal(strict.stats.requests, 2, 'one rejected attempt, one text attempt');
  await c.complete({ prompt: chatPrompt([{ role: 'user', content: 'again' }]), output: { name: 'answer', schema: Answer } });
  assert.equal(strict.stats.requests, 3, 'the rejection is remembered for the endpoint');
  assert.equal(strict.requests[2]!.body!.response_format, undefined);
  c.close();
  await strict.close();
});

test('an answer that does not match the schema is a failed parse, not an exception', async () => {
  server.setScript(() => ({ text: '{"next_line": "seven"}' }));
  const c = client();
  const result = await c.complete({ prompt: ask, output: { name: 'answer', schema: Answer } });
  const parsed = result.samples[0]!.parsed!;
  assert.equal(parsed.ok, false);
  c.close();
});

test('429 with Retry-After in seconds waits that long and then succeeds', async () => {
  server.setScript([{ status: 429, headers: { 'retry-after': '2' } }, { text: 'done' }]);
  const { waits, sleep } = recordingSleep();
  const c = client({}, { sleep });
  const result = await c.complete({ prompt: ask });
  assert.equal(result.samples[0]!.text, 'done');
  assert.deepEqual(waits, [2000]);
  const stats = c.stats();
  assert.equal(stats.requests, 2);
  assert.equal(stats.retries, 1);
  assert.equal(stats.failures, 0);
  c.close();
});

test('429 with Retry-After as an HTTP date waits until that date', async () => {
  const when = new Date(Date.now() + 30_000).toUTCString();
  server.setScript([{ status: 429, headers: { 'retry-after': when } }, { text: 'done' }]);
  const { waits, sleep } = recordingSleep();
  const c = client({}, { sleep });
  await c.complete({ prompt: ask });
  assert.equal(waits.length, 1);
  assert.ok(waits[0]! > 25_000 && waits[0]! <= 30_000, `waited ${waits[0]} ms`);
  c.close();
});

test('a Retry-After beyond the allowed maximum fails at once with the reason', async () => {
  server.setScript([{ status: 429, headers: { 'retry-after': '3600' } }]);
  const c = client({ maxRetryAfterMs: 60_000 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'rate_limited');
  assert.match(err.message, /3600 s/);
  assert.equal(c.stats().failures, 1);
  c.close();
});

test('500s are retried with exponential backoff and jitter until they stop', async () => {
  server.setScript([{ status: 500 }, { status: 502 }, { status: 503 }, { text: 'finally' }]);
  const { waits, sleep } = recordingSleep();
  const c = client({ backoffMs: 100, maxBackoffMs: 10_000 }, { sleep, random: () => 0.5 });
  const result = await c.complete({ prompt: ask });
  assert.equal(result.samples[0]!.text, 'finally');
  assert.deepEqual(waits, [50, 100, 200]);
  assert.equal(c.stats().retries, 3);
  c.close();
});

test('persistent 500s end as a server_error after the configured retries', async () => {
  server.setScript([{ status: 500 }]);
  server.resetStats();
  const c = client({ retries: 2 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'server_error');
  assert.equal(server.stats.requests, 3);
  assert.deepEqual({ requests: c.stats().requests, retries: c.stats().retries, failures: c.stats().failures }, { requests: 3, retries: 2, failures: 1 });
  c.close();
});

test('client errors (400) are not retried', async () => {
  server.setScript([{ status: 400, json: { error: { message: 'context too long', type: 'invalid_request_error' } } }]);
  server.resetStats();
  const c = client();
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'bad_request');
  assert.match(err.message, /context too long/);
  assert.equal(server.stats.requests, 1);
  c.close();
});

test('a server that never answers times out, and the attempt is retried', async () => {
  server.setScript([{ hang: true }, { text: 'second try' }]);
  const c = client({ timeoutMs: 500 });
  const result = await c.complete({ prompt: ask });
  assert.equal(result.samples[0]!.text, 'second try');
  assert.equal(c.stats().retries, 1);
  c.close();
});

test('a hanging server ends as a timeout error once retries are spent', async () => {
  server.setScript([{ hang: true }]);
  const c = client({ timeoutMs: 100, retries: 1 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'timeout');
  c.close();
});

test('a non-streaming body that stops half-way times out instead of hanging', async () => {
  server.setScript([{ stallAfterChunks: 0 }]);
  const c = client({ timeoutMs: 150, retries: 0 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'timeout');
  c.close();
});

test('a stream that stalls after its first chunk is abandoned after the idle timeout', async () => {
  server.setScript([{ text: 'a long answer that never finishes', stallAfterChunks: 1 }]);
  const c = client({ streamIdleMs: 150, retries: 3 });
  const seen: string[] = [];
  let caught: unknown;
  try {
    for await (const e of c.stream({ prompt: ask })) if (e.type === 'delta') seen.push(e.text);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ModelError && caught.code === 'timeout', `got ${String(caught)}`);
  assert.deepEqual(seen, ['a lo'], 'what arrived before the stall was delivered');
  assert.equal(c.stats().retries, 0, 'text was already shown, so the stream is not silently restarted');
  c.close();
});

test('a stream that stalls before any text is retried', async () => {
  server.setScript([{ text: 'never', stallAfterChunks: 0 }, { text: 'ok now' }]);
  const c = client({ streamIdleMs: 500 });
  const events = await collect(c.stream({ prompt: ask }));
  const done = events.at(-1)!;
  assert.ok(done.type === 'done' && done.completion.samples[0]!.text === 'ok now');
  c.close();
});

test('malformed JSON is a bad_response that is retried', async () => {
  server.setScript([{ raw: '{"id": "cmpl-1", "choices": [{"message": {"content": "hal' }, { text: 'whole' }]);
  const c = client();
  const result = await c.complete({ prompt: ask });
  assert.equal(result.samples[0]!.text, 'whole');
  assert.equal(c.stats().retries, 1);
  server.setScript([{ raw: 'not json at all' }]);
  const err = await rejection(client({ retries: 0 }).complete({ prompt: ask }));
  assert.equal(err.code, 'bad_response');
  c.close();
});

test('valid JSON of the wrong shape is a bad_response', async () => {
  server.setScript([{ raw: '{"result": "4"}' }]);
  const c = client({ retries: 0 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'bad_response');
  c.close();
});

test('a connection reset is retried and then succeeds', async () => {
  server.setScript([{ reset: true }, { text: 'after reset' }]);
  const c = client();
  const result = await c.complete({ prompt: ask });
  assert.equal(result.samples[0]!.text, 'after reset');
  assert.equal(c.stats().retries, 1);
  c.close();
});

test('repeated connection resets end as a connection error', async () => {
  server.setScript([{ reset: true }]);
  const c = client({ retries: 1 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'connection');
  c.close();
});

test('nobody listening is a connection error that says to start the server', async () => {
  const gone = await startOpenAIServer();
  const url = gone.url;
  await gone.close();
  const c = new ModelClient({ baseURL: url, model: 'm', retries: 0 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'connection');
  assert.match(err.message, /is the server running/);
  c.close();
});

test('an oversized response is refused, not buffered', async () => {
  server.setScript([{ oversizedBytes: 300_000 }]);
  const c = client({ maxResponseBytes: 100_000 });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(err.code, 'too_large');
  assert.equal(c.stats().retries, 0);
  c.close();
});

test('an oversized stream is cut off at the cap', async () => {
  server.setScript([{ text: 'y'.repeat(200_000), chunkChars: 5000 }]);
  const c = client({ maxResponseBytes: 50_000 });
  let received = 0;
  let caught: unknown;
  try {
    for await (const e of c.stream({ prompt: ask })) if (e.type === 'delta') received += e.text.length;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ModelError && caught.code === 'too_large', `got ${String(caught)}`);
  assert.ok(received < 50_000);
  c.close();
});

test('aborting in the middle of a stream closes the HTTP request', async () => {
  server.setScript(() => ({ text: 'x'.repeat(400), chunkChars: 4, chunkDelayMs: 20 }));
  server.resetStats();
  const c = client();
  const controller = new AbortController();
  let deltas = 0;
  let caught: unknown;
  try {
    for await (const e of c.stream({ prompt: ask, signal: controller.signal })) {
      if (e.type === 'delta' && ++deltas === 3) controller.abort();
    }
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ModelError && caught.code === 'aborted', `got ${String(caught)}`);
  assert.equal(deltas, 3);
  for (let i = 0; i < 100 && server.stats.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(server.stats.inFlight, 0, 'the server sees the request end');
  assert.equal(server.stats.aborted, 1, 'the server sees the client go away before the answer finished');
  c.close();
});

test('breaking out of a stream loop also closes the request', async () => {
  server.setScript(() => ({ text: 'z'.repeat(400), chunkChars: 4, chunkDelayMs: 20 }));
  server.resetStats();
  const c = client();
  for await (const e of c.stream({ prompt: ask })) if (e.type === 'delta') break;
  for (let i = 0; i < 100 && server.stats.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(server.stats.aborted, 1);
  c.close();
});

test('aborting a waiting request rejects it with aborted', async () => {
  server.setScript(() => ({ hang: true }));
  const c = client({ timeoutMs: 60_000 });
  const controller = new AbortController();
  const pending = c.complete({ prompt: ask, signal: controller.signal });
  setTimeout(() => controller.abort(), 30);
  const err = await rejection(pending);
  assert.equal(err.code, 'aborted');
  c.close();
});

test('the concurrency limit is never exceeded, as measured by the server', async () => {
  // Each answer waits until 4 requests are in flight (or 1 s passed), so the limit is surely reached.
  server.setScript(async () => {
    for (let waited = 0; server.stats.inFlight < 4 && waited < 1000; waited += 5) await new Promise((r) => setTimeout(r, 5));
    return { text: 'ok' };
  });
  server.resetStats();
  const c = client({ concurrency: 4 });
  await Promise.all(Array.from({ length: 24 }, (_, i) => c.complete({ prompt: chatPrompt([{ role: 'user', content: `q${i}` }]) })));
  assert.equal(server.stats.requests, 24);
  assert.equal(server.stats.maxInFlight, 4, 'the limit is reached and never passed');
  c.close();
});

test('retries wait outside the limit and still respect it', async () => {
  let n = 0;
  server.setScript(() => (n++ % 3 === 0 ? { status: 503 } : { text: 'ok', delayMs: 5 }));
  server.resetStats();
  const c = client({ concurrency: 3, backoffMs: 1 }, { sleep: (ms) => new Promise((r) => setTimeout(r, ms)) });
  await Promise.all(Array.from({ length: 15 }, () => c.complete({ prompt: ask })));
  assert.ok(server.stats.maxInFlight <= 3);
  assert.ok(c.stats().retries > 0);
  c.close();
});

test('the API key is sent as a bearer token and redacted from error messages', async () => {
  const key = 'sk-test-SECRET-0123456789';
  server.setScript([{ status: 401, json: { error: { message: `Incorrect API key provided: ${key}`, type: 'invalid_request_error' } } }]);
  server.resetStats();
  const c = client({ apiKey: key });
  const err = await rejection(c.complete({ prompt: ask }));
  assert.equal(server.requests[0]!.headers.authorization, `Bearer ${key}`);
  assert.equal(err.code, 'auth');
  assert.ok(!err.message.includes(key), err.message);
  assert.ok(!JSON.stringify(c).includes(key));
  assert.ok(!JSON.stringify(c.config).includes(key));
  // Streams go through the SDK: same header, and no platform fingerprint headers.
  server.setScript(() => ({ text: 'streamed' }));
  await collect(c.stream({ prompt: ask }));
  const streamed = server.requests.at(-1)!.headers;
  assert.equal(streamed.authorization, `Bearer ${key}`);
  assert.deepEqual(
    Object.keys(streamed).filter((h) => h.startsWith('x-stainless')),
    [],
  );
  c.close();
});

test('without a key no Authorization header is sent', async () => {
  server.setScript(undefined);
  server.resetStats();
  const c = client();
  await c.complete({ prompt: ask });
  assert.equal(server.requests[0]!.headers.authorization, undefined);
  c.close();
});

test('a plain request carries Host, the JSON headers and the exact body length', async () => {
  server.setScript(undefined);
  server.resetStats();
  const c = client();
  await c.complete({ prompt: chatPrompt([{ role: 'user', content: 'héllo — ünïcode' }]) });
  const { headers, body } = server.requests[0]!;
  assert.equal(headers.host, new URL(server.url).host);
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers.accept, 'application/json');
  assert.equal(headers['user-agent'], 'execverify');
  assert.equal(headers.connection, 'keep-alive');
  assert.equal(Number(headers['content-length']), Buffer.byteLength(JSON.stringify(body)));
  assert.deepEqual((body as { messages: unknown }).messages, [{ role: 'user', content: 'héllo — ünïcode' }]);
  c.close();
});

test('the models the server lists are readable', async () => {
  const c = client();
  assert.deepEqual(await c.listModels(), ['test-model']);
  c.close();
});

test('accounting sums tokens and reports latency percentiles', async () => {
  server.setScript(() => ({ text: 'one two three' }));
  const c = client();
  for (let i = 0; i < 4; i++) await c.complete({ prompt: chatPrompt([{ role: 'user', content: 'a b' }]) });
  const stats = c.stats();
  assert.equal(stats.calls, 4);
  assert.equal(stats.requests, 4);
  assert.equal(stats.promptTokens, 8);
  assert.equal(stats.completionTokens, 12);
  assert.ok(stats.latencyMs.p50 > 0 && stats.latencyMs.p95 >= stats.latencyMs.p50);
  c.close();
});

test('a server that refuses stream_options still streams (without usage), and that is remembered', async () => {
  server.setScript((req) =>
    req.body!.stream_options ? { status: 400, json: { error: { message: "unknown field 'stream_options'" } } } : { text: 'plain stream' },
  );
  server.resetStats();
  const c = client();
  const first = await collect(c.stream({ prompt: ask }));
  assert.ok(first.at(-1)!.type === 'done');
  await collect(c.stream({ prompt: ask }));
  assert.equal(server.stats.requests, 3, 'one refused attempt, then two plain streams');
  c.close();
});

test('a stream asking for JSON-schema output falls back to text when the server refuses it', async () => {
  const strict = await startOpenAIServer({ rejectJsonSchema: true, script: () => ({ text: '{"next_line": 2, "value": "x"}' }) });
  const c = new ModelClient({ baseURL: strict.url, model: 'm' });
  const events = await collect(c.stream({ prompt: ask, output: { name: 'answer', schema: Answer } }));
  const done = events.at(-1)!;
  assert.ok(done.type === 'done');
  if (done.type === 'done') {
    assert.equal(done.completion.structured, 'text');
    assert.deepEqual(done.completion.samples[0]!.parsed, { ok: true, value: { next_line: 2, value: 'x' } });
  }
  assert.equal(strict.stats.requests, 2);
  c.close();
  await strict.close();
});
