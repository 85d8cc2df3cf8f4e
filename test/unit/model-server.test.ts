// The OpenAI-compatible test server itself (other suites build on it): it
// speaks the real protocol, and its standalone mode serves a scripted file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { startOpenAIServer } from '../support/openai-server';

test('non-streaming chat answers have the OpenAI shape, with n choices and usage', async () => {
  const server = await startOpenAIServer({ script: () => ({ text: ['one', 'two'] }) });
  const res = await fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test-model', n: 2, messages: [{ role: 'user', content: 'a b c' }] }),
  });
  const body = (await res.json()) as {
    object: string;
    choices: { index: number; message: { content: string } }[];
    usage: { prompt_tokens: number; total_tokens: number };
  };
  assert.equal(body.object, 'chat.completion');
  assert.deepEqual(
    body.choices.map((c) => [c.index, c.message.content]),
    [
      [0, 'one'],
      [1, 'two'],
    ],
  );
  assert.equal(body.usage.prompt_tokens, 3);
  assert.equal(body.usage.total_tokens, 5);
  await server.close();
});

test('streaming answers are SSE data lines ending with [DONE]', async () => {
  const server = await startOpenAIServer({ script: () => ({ text: 'abcdef', chunkChars: 2 }) });
  const res = await fetch(`${server.url}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test-model', prompt: 'x', stream: true, stream_options: { include_usage: true } }),
  });
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const events = (await res.text()).split('\n\n').filter(Boolean);
  assert.ok(events.every((e) => e.startsWith('data: ')));
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { choices: { text: string }[]; usage?: unknown });
  assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), 'abcdef');
  assert.ok(chunks.at(-1)!.usage, 'the usage chunk comes last');
  await server.close();
});

test('unknown routes are 404 and /v1/models lists the models', async () => {
  const server = await startOpenAIServer({ models: ['a', 'b'] });
  assert.equal((await fetch(`${server.url}/embeddings`, { method: 'POST', body: '{}' })).status, 404);
  const models = (await (await fetch(`${server.url}/models`)).json()) as { data: { id: string }[] };
  assert.deepEqual(
    models.data.map((m) => m.id),
    ['a', 'b'],
  );
  await server.close();
});

test('standalone mode serves a JSON script of replies in order', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'execverify-server-'));
  const script = path.join(dir, 'script.json');
  await fs.writeFile(script, JSON.stringify([{ status: 503 }, { text: 'from the file' }]));
  const child = spawn(process.execPath, ['--import', 'tsx', path.resolve(__dirname, '../support/openai-server.ts'), '--script', script, '--quiet'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
      child.stdout.on('data', (d: Buffer) => {
        const m = /listening (\S+)/.exec(String(d));
        if (m) resolve(m[1]!);
      });
    });
    const ask = () =>
      fetch(`${url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'q' }] }),
      });
    assert.equal((await ask()).status, 503);
    const ok = (await (await ask()).json()) as { choices: { message: { content: string } }[] };
    assert.equal(ok.choices[0]!.message.content, 'from the file');
  } finally {
    child.kill();
    await fs.rm(dir, { recursive: true, force: true });
  }
});
