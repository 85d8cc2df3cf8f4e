// The response cache: keyed by what changes the answer, never by the key,
// written atomically, and tolerant of corrupt entries.
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { cacheKey, canonicalJson, DiskCache, type CacheKeyParts } from '../../src/engine/model/cache';
import { ModelClient } from '../../src/engine/model/client';
import { chatPrompt } from '../../src/engine/model/prompt';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

let server: OpenAIServer;
let dir: string;
before(async () => {
  server = await startOpenAIServer({ script: (req) => ({ text: `answer #${req.index}` }) });
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'execverify-cache-'));
});
after(async () => {
  await server.close();
  await fs.rm(dir, { recursive: true, force: true });
});

const base: CacheKeyParts = {
  endpoint: 'http://127.0.0.1:8000/v1',
  model: 'm',
  api: 'chat',
  prompt: { kind: 'chat', messages: [{ role: 'user', content: 'q' }] },
  parameters: { temperature: 0, n: 1 },
  templateVersion: 'execverify@1',
};

test('the cache key changes with endpoint, model, api, prompt, parameters and template version', () => {
  const k = cacheKey(base);
  for (const changed of [
    { ...base, endpoint: 'http://127.0.0.1:8001/v1' },
    { ...base, model: 'm2' },
    { ...base, api: 'completions' },
    { ...base, prompt: { kind: 'chat', messages: [{ role: 'user', content: 'q2' }] } },
    { ...base, parameters: { temperature: 0.2, n: 1 } },
    { ...base, parameters: { temperature: 0, n: 2 } },
    { ...base, templateVersion: 'execverify@2' },
  ]) {
    assert.notEqual(cacheKey(changed), k, JSON.stringify(changed));
  }
});

test('the cache key ignores key order and undefined fields', () => {
  assert.equal(cacheKey({ ...base, parameters: { n: 1, temperature: 0, seed: undefined } }), cacheKey(base));
  assert.equal(canonicalJson({ b: 1, a: [1, { d: 2, c: 3 }] }), '{"a":[1,{"c":3,"d":2}],"b":1}');
});

test('a second identical call is answered from disk without a request', async () => {
  const cache = new DiskCache(path.join(dir, 'second'));
  const c = new ModelClient({ baseURL: server.url, model: 'm' }, { cache });
  server.resetStats();
  const prompt = chatPrompt([{ role: 'user', content: 'cache me' }]);
  const first = await c.complete({ prompt, templateVersion: 't@1' });
  const second = await c.complete({ prompt, templateVersion: 't@1' });
  assert.equal(server.stats.requests, 1);
  assert.equal(first.cached, false);
  assert.equal(second.cached, true);
  assert.deepEqual(second.samples, first.samples);
  assert.equal(c.stats().cacheHits, 1);
  // A fresh client (a re-run) reads the same entry.
  const rerun = new ModelClient({ baseURL: server.url, model: 'm' }, { cache });
  assert.equal((await rerun.complete({ prompt, templateVersion: 't@1' })).cached, true);
  assert.equal(server.stats.requests, 1);
  // A new template version is a new question.
  await rerun.complete({ prompt, templateVersion: 't@2' });
  assert.equal(server.stats.requests, 2);
  c.close();
  rerun.close();
});

test('cache: false neither reads nor writes', async () => {
  const cache = new DiskCache(path.join(dir, 'optout'));
  const c = new ModelClient({ baseURL: server.url, model: 'm' }, { cache });
  server.resetStats();
  const prompt = chatPrompt([{ role: 'user', content: 'no cache' }]);
  await c.complete({ prompt, cache: false });
  await c.complete({ prompt, cache: false });
  assert.equal(server.stats.requests, 2);
  const files = await fs.readdir(path.join(dir, 'optout')).catch(() => []);
  assert.deepEqual(files, []);
  c.close();
});

test('the API key is not part of the key and never written to the cache', async () => {
  const cacheDir = path.join(dir, 'secret');
  const cache = new DiskCache(cacheDir);
  const prompt = chatPrompt([{ role: 'user', content: 'secret?' }]);
  const a = new ModelClient({ baseURL: server.url, model: 'm', apiKey: 'sk-AAAA-secret-1' }, { cache });
  const b = new ModelClient({ baseURL: server.url, model: 'm', apiKey: 'sk-BBBB-secret-2' }, { cache });
  await a.complete({ prompt });
  assert.equal((await b.complete({ prompt })).cached, true, 'another key, same cache entry');
  const files = (await fs.readdir(cacheDir, { recursive: true })) as string[];
  for (const f of files) {
    const full = path.join(cacheDir, f);
    if ((await fs.stat(full)).isFile()) {
      const text = await fs.readFile(full, 'utf8');
      assert.ok(!text.includes('secret-1') && !text.includes('secret-2'), `${f} holds the key`);
    }
  }
  a.close();
  b.close();
});

test('a corrupt or truncated entry is a miss and is replaced', async () => {
  const cacheDir = path.join(dir, 'corrupt');
  const cache = new DiskCache(cacheDir);
  const c = new ModelClient({ baseURL: server.url, model: 'm' }, { cache });
  const prompt = chatPrompt([{ role: 'user', content: 'corrupt me' }]);
  await c.complete({ prompt });
  const [sub] = await fs.readdir(cacheDir);
  const [file] = await fs.readdir(path.join(cacheDir, sub!));
  const full = path.join(cacheDir, sub!, file!);
  for (const garbage of ['{"format": "execverify.model-cache/1", "key": "tru', '[]', '{"format":"other"}']) {
    await fs.writeFile(full, garbage);
    server.resetStats();
    const again = await c.complete({ prompt });
    assert.equal(again.cached, false);
    assert.equal(server.stats.requests, 1);
    assert.equal((await c.complete({ prompt })).cached, true, 'the entry was rewritten');
  }
  c.close();
});

test('writes are atomic: no temp files remain and concurrent writers leave a valid entry', async () => {
  const cacheDir = path.join(dir, 'atomic');
  const cache = new DiskCache(cacheDir);
  const entry = (n: number) => ({
    format: 'execverify.model-cache/1' as const,
    key: 'ab'.repeat(32),
    model: 'm',
    samples: [{ text: `writer ${n} `.repeat(2000), finishReason: 'stop' }],
    usage: { promptTokens: 1, completionTokens: 1 },
    structured: 'text' as const,
    createdAt: new Date(0).toISOString(),
  });
  await Promise.all(Array.from({ length: 8 }, (_, n) => cache.put(entry(n))));
  const got = await cache.get('ab'.repeat(32));
  assert.ok(got, 'the entry reads back');
  assert.match(got.samples[0]!.text, /^writer \d /);
  const names = await fs.readdir(path.join(cacheDir, 'ab'));
  assert.deepEqual(names, [`${'ab'.repeat(32)}.json`]);
});

test('a streamed answer is cached and replayed as one delta', async () => {
  const cache = new DiskCache(path.join(dir, 'stream'));
  const c = new ModelClient({ baseURL: server.url, model: 'm' }, { cache });
  server.resetStats();
  const prompt = chatPrompt([{ role: 'user', content: 'stream me' }]);
  const texts = async () => {
    const out: string[] = [];
    for await (const e of c.stream({ prompt })) if (e.type === 'delta') out.push(e.text);
    return out;
  };
  const first = await texts();
  const second = await texts();
  assert.equal(server.stats.requests, 1);
  assert.ok(first.length > 1);
  assert.deepEqual(second, [first.join('')]);
  c.close();
});
