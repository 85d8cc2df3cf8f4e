// A key that a server echoes in a 200 body reaches neither the cache nor the
// screen: against the real OpenAI-compatible test server over HTTP, a server
// that copies the Authorization header into its answer, streamed or not.
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DiskCache } from '../../src/engine/model/cache';
import { ModelClient, type StreamEvent } from '../../src/engine/model/client';
import { redactSecrets, StreamRedactor } from '../../src/engine/model/config';
import { chatPrompt, textPrompt } from '../../src/engine/model/prompt';
import { ModelProvider } from '../../src/engine/model/provider';
import { startOpenAIServer, type OpenAIServer, type Script } from '../support/openai-server';

const KEY = 'sk-echo-' + 'Zq8rT2vLw9pK4xN7mB3c';
const ask = chatPrompt([{ role: 'user', content: 'What does f(2) return?' }]);

/** The server copies the Authorization header it got into the answer. */
const echo =
  (chunkChars: number): Script =>
  (req) => ({ text: `f(2) returns 4 (you sent ${String(req.headers.authorization)}; again: ${String(req.headers.authorization).slice(7)})`, chunkChars });

let server: OpenAIServer;
let dir: string;
before(async () => {
  server = await startOpenAIServer({ script: echo(4) });
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'execverify-echo-'));
});
after(async () => {
  await server.close();
  await fs.rm(dir, { recursive: true, force: true });
});

async function cacheText(cacheDir: string): Promise<string> {
  const parts: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else parts.push(await fs.readFile(p, 'utf8'));
    }
  };
  await walk(cacheDir);
  return parts.join('\n');
}

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

test('a non-streamed answer echoing the key is redacted before it is returned or cached', async () => {
  server.setScript(echo(4));
  const cacheDir = path.join(dir, 'plain');
  const client = new ModelClient({ baseURL: server.url, model: 'test-model', apiKey: KEY }, { cache: new DiskCache(cacheDir) });
  try {
    const first = await client.complete({ prompt: ask });
    assert.equal(server.requests.at(-1)!.headers.authorization, `Bearer ${KEY}`, 'the server really got the key');
    assert.equal(first.samples[0]!.text, 'f(2) returns 4 (you sent Bearer ***; again: ***)');
    const again = await client.complete({ prompt: ask });
    assert.equal(again.cached, true);
    assert.equal(again.samples[0]!.text, first.samples[0]!.text);
    const stored = await cacheText(cacheDir);
    assert.match(stored, /f\(2\) returns 4/, 'the answer was cached');
    assert.ok(!stored.includes(KEY), 'the cache never holds the key');
  } finally {
    client.close();
  }
});

for (const chunkChars of [1, 3, 7]) {
  test(`a streamed answer echoing the key never yields it, even split over ${chunkChars}-character chunks`, async () => {
    server.setScript(echo(chunkChars));
    const cacheDir = path.join(dir, `stream-${chunkChars}`);
    const client = new ModelClient({ baseURL: server.url, model: 'test-model', apiKey: KEY }, { cache: new DiskCache(cacheDir) });
    try {
      const events = await collect(client.stream({ prompt: ask }));
      const deltas = events.filter((e): e is Extract<StreamEvent, { type: 'delta' }> => e.type === 'delta');
      assert.ok(deltas.length > 3, 'the answer really streamed in pieces');
      for (const d of deltas) assert.ok(!d.text.includes(KEY));
      const shown = deltas.map((d) => d.text).join('');
      assert.equal(shown, 'f(2) returns 4 (you sent Bearer ***; again: ***)');
      const done = events.at(-1)!;
      assert.equal(done.type === 'done' && done.completion.samples[0]!.text, shown);
      assert.ok(!(await cacheText(cacheDir)).includes(KEY));
    } finally {
      client.close();
    }
  });
}

test('plain completions and the provider the editor and CLI call are covered too', async () => {
  server.setScript(echo(2));
  const provider = new ModelProvider({ baseURL: server.url, model: 'test-model', apiKey: KEY, api: 'completions' });
  try {
    const reply = await provider.answer({ prompt: textPrompt('f(2) = '), format: 'execverify', questions: [{ kind: 'output' }] });
    assert.ok(!reply.samples[0]!.text.includes(KEY));
    assert.match(reply.samples[0]!.text, /you sent Bearer \*\*\*/);
    const streamed = await collect(provider.stream({ prompt: textPrompt('f(2) = '), format: 'execverify', questions: [{ kind: 'output' }] }));
    assert.ok(!JSON.stringify(streamed).includes(KEY));
  } finally {
    provider.close();
  }
});

test('an answer cached unredacted by an older client is redacted when it is read back', async () => {
  const cacheDir = path.join(dir, 'old');
  server.setScript(() => ({ text: `leaked ${KEY}` }));
  const keyless = new ModelClient({ baseURL: server.url, model: 'test-model' }, { cache: new DiskCache(cacheDir) });
  await keyless.complete({ prompt: ask });
  keyless.close();
  assert.ok((await cacheText(cacheDir)).includes(KEY), 'the old entry holds the key');
  const requests = server.stats.requests;
  const client = new ModelClient({ baseURL: server.url, model: 'test-model', apiKey: KEY }, { cache: new DiskCache(cacheDir) });
  try {
    const hit = await client.complete({ prompt: ask });
    assert.equal(hit.cached, true);
    assert.equal(server.stats.requests, requests, 'no request: the cache answered');
    assert.equal(hit.samples[0]!.text, 'leaked ***');
    const streamed = await collect(client.stream({ prompt: ask }));
    assert.ok(!JSON.stringify(streamed).includes(KEY));
  } finally {
    client.close();
  }
});

test('a short placeholder key ("EMPTY", as vLLM documents) is a word, not a secret: answers keep it', async () => {
  server.setScript(() => ({ text: 'the list is EMPTY' }));
  const client = new ModelClient({ baseURL: server.url, model: 'test-model', apiKey: 'EMPTY' });
  try {
    assert.equal((await client.complete({ prompt: ask })).samples[0]!.text, 'the list is EMPTY');
  } finally {
    client.close();
  }
});

test('the stream redactor, at every split point, yields exactly the redacted whole', () => {
  const secret = 'abcabd-secret';
  const whole = `x abcab abcabd-secret y abcabd-secre abcabd-secretabcabd-secret z abc`;
  const expected = redactSecrets(whole, [secret]);
  for (let i = 0; i <= whole.length; i++) {
    for (let j = i; j <= whole.length; j += 5) {
      const r = new StreamRedactor(secret);
      const pieces = [r.push(whole.slice(0, i)), r.push(whole.slice(i, j)), r.push(whole.slice(j)), r.flush()];
      for (const p of pieces) assert.ok(!p.includes(secret));
      assert.equal(pieces.join(''), expected, `split at ${i}, ${j}`);
    }
  }
});
