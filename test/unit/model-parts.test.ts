// The small pieces of the model client: settings, secrets, JSON Schema from
// zod, Retry-After, backoff, the concurrency limiter, JSON answers in text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { quantile } from '../../src/engine/model/accounting';
import { ConfigError, describeEndpoint, endpointFromEnv, parseEndpointConfig, redactSecrets } from '../../src/engine/model/config';
import { toJsonSchema, UnsupportedSchemaError } from '../../src/engine/model/json-schema';
import { ConcurrencyLimiter } from '../../src/engine/model/limiter';
import { backoffDelay, parseRetryAfter } from '../../src/engine/model/retry';
import { parseStructured } from '../../src/engine/model/structured';

test('settings come from the environment, flags win, and nothing set means no endpoint', () => {
  assert.equal(endpointFromEnv({}), undefined);
  const env = { EXECVERIFY_BASE_URL: 'http://127.0.0.1:8000/v1', EXECVERIFY_MODEL: 'qwen', OPENAI_API_KEY: 'sk-env' };
  const fromEnv = endpointFromEnv(env)!;
  assert.equal(fromEnv.model, 'qwen');
  assert.equal(fromEnv.apiKey, 'sk-env');
  assert.equal(fromEnv.api, 'chat');
  assert.equal(endpointFromEnv({ ...env, EXECVERIFY_API_KEY: 'sk-own' })!.apiKey, 'sk-own');
  assert.equal(endpointFromEnv(env, { model: 'other' })!.model, 'other');
  assert.throws(() => endpointFromEnv({ EXECVERIFY_MODEL: 'qwen' }), /no endpoint/);
  assert.throws(() => endpointFromEnv({ EXECVERIFY_BASE_URL: 'http://x/v1' }), /no model/);
});

test('invalid settings fail with one readable line', () => {
  assert.throws(
    () => parseEndpointConfig({ baseURL: 'not a url', model: 'm' }),
    (err: unknown) => err instanceof ConfigError && /baseURL/.test(err.message),
  );
  assert.throws(() => parseEndpointConfig({ baseURL: 'http://x/v1', model: 'm', temperature: 5 }), /temperature/);
  assert.throws(() => parseEndpointConfig({ baseURL: 'http://x/v1', model: 'm', concurrency: 0 }), /concurrency/);
});

test('labels never show credentials', () => {
  assert.equal(describeEndpoint({ baseURL: 'http://user:pw@host:8000/v1/?token=abc', model: 'm' }), 'm @ http://host:8000/v1');
  assert.equal(redactSecrets('key sk-abc123 and Bearer sk-abc123', ['sk-abc123']), 'key *** and Bearer ***');
});

test('zod answer schemas become closed JSON Schemas', () => {
  const schema = z.object({
    next_line: z.number().int(),
    variables: z.array(z.object({ name: z.string(), value: z.string(), type: z.string() })).max(5),
    kind: z.enum(['a', 'b']),
    note: z.string().optional(),
    flag: z.boolean().nullable(),
    pair: z.tuple([z.number(), z.literal('x')]),
  });
  assert.deepEqual(toJsonSchema(schema), {
    type: 'object',
    properties: {
      next_line: { type: 'integer' },
      variables: {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, value: { type: 'string' }, type: { type: 'string' } },
          required: ['name', 'value', 'type'],
          additionalProperties: false,
        },
        maxItems: 5,
      },
      kind: { type: 'string', enum: ['a', 'b'] },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      flag: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
      pair: { type: 'array', prefixItems: [{ type: 'number' }, { const: 'x', type: 'string' }], minItems: 2, maxItems: 2 },
    },
    required: ['next_line', 'variables', 'kind', 'note', 'flag', 'pair'],
    additionalProperties: false,
  });
  assert.throws(() => toJsonSchema(z.object({ when: z.date() })), UnsupportedSchemaError);
});

test('Retry-After is read as seconds, as an HTTP date, or as retry-after-ms', () => {
  const h = (o: Record<string, string>) => ({ get: (n: string) => o[n] ?? null });
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter(h({ 'retry-after': '3' }), now), 3000);
  assert.equal(parseRetryAfter(h({ 'retry-after': '0.5' }), now), 500);
  assert.equal(parseRetryAfter(h({ 'retry-after': 'Thu, 01 Jan 2026 00:00:10 GMT' }), now), 10_000);
  assert.equal(parseRetryAfter(h({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }), now), 0);
  assert.equal(parseRetryAfter(h({ 'retry-after-ms': '250', 'retry-after': '9' }), now), 250);
  assert.equal(parseRetryAfter(h({ 'retry-after': 'soon' }), now), undefined);
  assert.equal(parseRetryAfter(h({}), now), undefined);
});

test('backoff doubles per retry, is capped, and is jittered below the ceiling', () => {
  assert.equal(
    backoffDelay(0, 100, 1000, () => 0.999),
    99,
  );
  assert.equal(
    backoffDelay(3, 100, 1000, () => 0.999),
    799,
  );
  assert.equal(
    backoffDelay(10, 100, 1000, () => 0.999),
    999,
  );
  assert.equal(
    backoffDelay(3, 100, 1000, () => 0),
    0,
  );
});

test('the limiter hands slots out in order and never above the limit', async () => {
  const limiter = new ConcurrencyLimiter(2);
  let active = 0;
  let peak = 0;
  const order: number[] = [];
  await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      limiter.run(async () => {
        active++;
        peak = Math.max(peak, active);
        order.push(i);
        await new Promise((r) => setImmediate(r));
        active--;
      }),
    ),
  );
  assert.equal(peak, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(limiter.inFlight, 0);
});

test('a queued waiter that is aborted leaves the queue without taking a slot', async () => {
  const limiter = new ConcurrencyLimiter(1);
  const release = await limiter.acquire();
  const controller = new AbortController();
  const waiting = limiter.acquire(controller.signal);
  assert.equal(limiter.queued, 1);
  controller.abort(new Error('stop'));
  await assert.rejects(waiting, /stop/);
  assert.equal(limiter.queued, 0);
  release();
  assert.equal(limiter.inFlight, 0);
});

test('JSON answers are found in plain JSON, code fences or prose, and validated', () => {
  const schema = z.object({ next_line: z.number().int() });
  assert.deepEqual(parseStructured('{"next_line": 3}', schema), { ok: true, value: { next_line: 3 } });
  assert.deepEqual(parseStructured('Here:\n```json\n{"next_line": 4}\n```', schema), { ok: true, value: { next_line: 4 } });
  assert.deepEqual(parseStructured('I think {"next_line": 5} is right', schema), { ok: true, value: { next_line: 5 } });
  assert.equal(parseStructured('no json here', schema).ok, false);
  const wrong = parseStructured('{"next_line": "5"}', schema);
  assert.ok(!wrong.ok && /next_line/.test(wrong.error));
});

test('quantiles use the nearest rank', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(quantile(xs, 0.5), 50);
  assert.equal(quantile(xs, 0.95), 95);
  assert.equal(quantile([7], 0.95), 7);
  assert.equal(quantile([], 0.5), 0);
});
