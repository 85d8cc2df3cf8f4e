// Batch files: OpenAI Batch API request JSONL out, result JSONL in, matched by
// custom_id, with bad lines reported one by one.
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { z } from 'zod';
import { batchRequestLines, BatchRequestLineSchema, parseBatchResults, readBatchResults, writeBatchFile, type BatchItem } from '../../src/engine/model/batch';
import { MemoryCache } from '../../src/engine/model/cache';
import { ModelClient } from '../../src/engine/model/client';
import { chatPrompt, textPrompt } from '../../src/engine/model/prompt';
import { startOpenAIServer } from '../support/openai-server';

const items: BatchItem[] = [
  { customId: 'rec-1', request: { prompt: chatPrompt([{ role: 'user', content: 'f(1)?' }]) } },
  { customId: 'rec-2', request: { prompt: chatPrompt([{ role: 'user', content: 'f(2)?' }]), samples: 4, sampling: { temperature: 0.8 } } },
];

test('request lines follow the Batch API shape with the endpoint settings in each body', () => {
  const lines = batchRequestLines({ model: 'qwen', temperature: 0, maxTokens: 256, seed: 3 }, items);
  assert.equal(lines.length, 2);
  for (const line of lines) assert.ok(BatchRequestLineSchema.safeParse(line).success);
  assert.deepEqual(lines[0], {
    custom_id: 'rec-1',
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'qwen', messages: [{ role: 'user', content: 'f(1)?' }], temperature: 0, max_tokens: 256, seed: 3 },
  });
  assert.equal(lines[1]!.body.n, 4);
  assert.equal(lines[1]!.body.temperature, 0.8);
});

test('completions mode writes raw prompts to /v1/completions', () => {
  const [line] = batchRequestLines({ model: 'raw', api: 'completions' }, [{ customId: 'a', request: { prompt: textPrompt('def f(): ...') } }]);
  assert.equal(line!.url, '/v1/completions');
  assert.equal(line!.body.prompt, 'def f(): ...');
});

test('a structured request carries the JSON schema response format', () => {
  const [line] = batchRequestLines({ model: 'm' }, [
    { customId: 'a', request: { prompt: textPrompt('q'), output: { name: 'next', schema: z.object({ next_line: z.number().int() }) } } },
  ]);
  const format = line!.body.response_format as { type: string; json_schema: { schema: { properties: Record<string, unknown> } } };
  assert.equal(format.type, 'json_schema');
  assert.deepEqual(format.json_schema.schema.properties, { next_line: { type: 'integer' } });
});

test('duplicate custom_ids are refused when writing', () => {
  assert.throws(() => batchRequestLines({ model: 'm' }, [items[0]!, items[0]!]), /duplicate custom_id 'rec-1'/);
});

test('the request file is JSONL, one request per line, and never holds the API key', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'execverify-batch-'));
  const file = path.join(dir, 'requests.jsonl');
  const count = await writeBatchFile(file, { model: 'm', apiKey: 'sk-never-in-files' }, items);
  const text = await fs.readFile(file, 'utf8');
  assert.equal(count, 2);
  assert.equal(text.trim().split('\n').length, 2);
  assert.ok(!text.includes('sk-never-in-files'));
  assert.deepEqual(JSON.parse(text.split('\n')[0]!).custom_id, 'rec-1');
  await fs.rm(dir, { recursive: true, force: true });
});

function ok(customId: string, texts: string[]) {
  return JSON.stringify({
    id: `batch_req_${customId}`,
    custom_id: customId,
    response: {
      status_code: 200,
      request_id: 'r',
      body: {
        id: 'chatcmpl-x',
        object: 'chat.completion',
        model: 'qwen',
        choices: texts.map((t, index) => ({ index, message: { role: 'assistant', content: t }, finish_reason: 'stop' })),
        usage: { prompt_tokens: 10, completion_tokens: texts.length * 2, total_tokens: 10 + texts.length * 2 },
      },
    },
    error: null,
  });
}

test('results are matched by custom_id whatever their order, and bad lines are reported, not fatal', () => {
  const text = [
    ok('rec-2', ['a', 'b', 'c', 'd']),
    'this is not json',
    JSON.stringify({ custom_id: 'rec-9', response: null, error: { code: 'x', message: 'y' } }),
    JSON.stringify({ custom_id: 'rec-3', response: { status_code: 500, body: { error: { message: 'engine died' } } }, error: null }),
    JSON.stringify({ custom_id: 'rec-4', response: null, error: { code: 'batch_expired', message: 'expired' } }),
    JSON.stringify({ custom_id: 'rec-5', response: { status_code: 200, body: { nonsense: true } }, error: null }),
    '',
    ok('rec-1', ['only']),
    ok('rec-1', ['again']),
  ].join('\n');
  const imported = parseBatchResults(text, { api: 'chat', expected: ['rec-1', 'rec-2', 'rec-3', 'rec-4', 'rec-5', 'rec-6'] });
  assert.deepEqual([...imported.results.keys()].sort(), ['rec-1', 'rec-2']);
  assert.deepEqual(
    imported.results.get('rec-2')!.samples.map((s) => s.text),
    ['a', 'b', 'c', 'd'],
  );
  assert.equal(imported.results.get('rec-1')!.samples[0]!.text, 'only');
  assert.deepEqual(imported.results.get('rec-2')!.usage, { promptTokens: 10, completionTokens: 8 });
  const byLine = Object.fromEntries(imported.errors.map((e) => [e.line, e]));
  assert.match(byLine[2]!.message, /not a JSON line/);
  assert.match(byLine[3]!.message, /unknown custom_id/);
  assert.match(byLine[4]!.message, /status 500: engine died/);
  assert.match(byLine[5]!.message, /batch_expired/);
  assert.match(byLine[6]!.message, /not a chat completion/);
  assert.match(byLine[9]!.message, /duplicate/);
  assert.equal(imported.errors.length, 6);
  assert.deepEqual(imported.missing, ['rec-6']);
});

test('structured answers in results are validated per custom_id', async () => {
  const schema = z.object({ next_line: z.number().int() });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'execverify-batch-'));
  const file = path.join(dir, 'results.jsonl');
  await fs.writeFile(file, [ok('a', ['{"next_line": 4}']), ok('b', ['{"next_line": "four"}'])].join('\n') + '\n');
  const output = { name: 'next', schema };
  const imported = await readBatchResults(file, {
    api: 'chat',
    outputs: new Map([
      ['a', output],
      ['b', output],
    ]),
  });
  assert.deepEqual(imported.results.get('a')!.samples[0]!.parsed, { ok: true, value: { next_line: 4 } });
  assert.equal(imported.results.get('b')!.samples[0]!.parsed!.ok, false);
  await fs.rm(dir, { recursive: true, force: true });
});

test('imported batch results fill the cache, so the same online requests cost nothing', async () => {
  const server = await startOpenAIServer({
    script: (req) => ({ text: (req.body!.messages as { content: string }[])[0]!.content.replace('?', '!'), choices: Number(req.body!.n ?? 1) }),
  });
  const cache = new MemoryCache();
  const client = new ModelClient({ baseURL: server.url, model: 'm', temperature: 0 }, { cache });
  const batch: BatchItem[] = items.map((i) => ({ ...i, request: { ...i.request, templateVersion: 'execverify@1' } }));
  // What an offline runner (vLLM run_batch, the Batch API) does: send each body, write a result line.
  const results: string[] = [];
  for (const line of batchRequestLines(client.config, batch)) {
    const res = await fetch(`${server.url}${line.url.replace(/^\/v1/, '')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(line.body),
    });
    results.push(
      JSON.stringify({ id: `r-${line.custom_id}`, custom_id: line.custom_id, response: { status_code: res.status, body: await res.json() }, error: null }),
    );
  }
  const imported = parseBatchResults(results.reverse().join('\n'), { api: 'chat', expected: batch.map((b) => b.customId) });
  assert.equal(await client.storeBatchResults(batch, imported), 2);
  server.resetStats();
  const online = await client.complete(batch[1]!.request);
  assert.equal(online.cached, true);
  assert.equal(online.samples.length, 4);
  assert.equal(online.samples[0]!.text, 'f(2)!');
  assert.equal(server.stats.requests, 0);
  client.close();
  await server.close();
});
