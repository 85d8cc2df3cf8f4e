// `execverify ask` end to end: a real trace, real prompts, a model over HTTP
// (the test server) or the baseline, the real Python judge.
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { main } from '../../src/cli/main';
import { prepareAsk } from '../../src/engine/ask';
import { loadTemplates } from '../../src/engine/model/templates';
import { TracerPool } from '../../src/engine/trace/runner';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

const SOURCE = [
  'def f(xs):',
  '    total = 0',
  '    for x in xs:',
  '        if x % 2:',
  '            total += x',
  '        else:',
  '            total -= 1',
  '    return total',
  '',
].join('\n');
const ENTRY = 'f([1, 2, 3])';

let dir: string;
let file: string;
let server: OpenAIServer;
before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'execverify-ask-'));
  file = path.join(dir, 'prog.py');
  await fs.writeFile(file, SOURCE);
  server = await startOpenAIServer();
});
after(async () => {
  await server.close();
  await fs.rm(dir, { recursive: true, force: true });
});

async function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, done) {
        append(String(chunk));
        done();
      },
    });
  const code = await main(['ask', ...args], {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    env: { PATH: process.env.PATH, ...(process.env.EXECVERIFY_PYTHON ? { EXECVERIFY_PYTHON: process.env.EXECVERIFY_PYTHON } : {}), ...env },
    cwd: dir,
    signal: new AbortController().signal,
  });
  return { code, stdout, stderr };
}

test('with no endpoint it says how to connect one and answers with the labelled baseline', async () => {
  const { code, stdout, stderr } = await run([file, '--entry', ENTRY]);
  assert.equal(code, 0, stderr);
  assert.match(stderr, /No model endpoint is configured/);
  assert.match(stderr, /vllm serve/);
  assert.match(stderr, /ollama/);
  assert.match(stdout, /provider: baseline \(trivial answers, not a model\)/);
  assert.match(stdout, /1 +output +f\(\[1, 2, 3\]\) returns +None +3 +WRONG/);
  assert.match(stdout, /right \(equal\)/, 'some trivial answers are right');
  assert.doesNotMatch(stdout, /model usage/);
});

test('a model that answers perfectly earns R = 2 on every prompt', async () => {
  // The perfect answer, computed the way ask computes its questions.
  const pool = new TracerPool({ size: 1 });
  const trace = await pool.trace({ path: file, entry: { kind: 'call', expr: ENTRY }, cwd: dir });
  await pool.close();
  const loaded = await loadTemplates(undefined);
  assert.ok(loaded.ok);
  const template = loaded.templates.get('execverify')!;
  const perfect = prepareAsk(trace, template, { kind: 'call' }).prompts[0]!.reference;
  server.setScript(() => ({ text: `Let me trace it.\n${perfect}` }));
  server.resetStats();
  const { code, stdout, stderr } = await run([file, '--entry', ENTRY, '--base-url', server.url, '--model', 'exec-model', '--samples', '2', '--no-cache']);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /provider: model exec-model @ http:\/\/127\.0\.0\.1/);
  assert.equal((stdout.match(/R = 2\.00/g) ?? []).length, 2, stdout);
  assert.doesNotMatch(stdout, /WRONG/);
  assert.match(stdout, /model usage: 1 calls, 1 requests/);
  assert.equal(server.requests[0]!.body!.n, 2);
  assert.equal(stderr, '');
});

test('the API key comes from the environment and is never printed', async () => {
  server.setScript(() => ({ text: 'no idea' }));
  server.resetStats();
  const key = 'sk-ask-test-SECRET';
  const { code, stdout, stderr } = await run([file, '--entry', ENTRY, '--no-cache'], {
    EXECVERIFY_BASE_URL: server.url,
    EXECVERIFY_MODEL: 'm',
    EXECVERIFY_API_KEY: key,
  });
  assert.equal(code, 0, stderr);
  assert.equal(server.requests[0]!.headers.authorization, `Bearer ${key}`);
  assert.ok(!stdout.includes(key) && !stderr.includes(key));
  assert.match(stdout, /R = 0\.00/);
});

test('answers are cached on disk: a re-run sends no request', async () => {
  server.setScript(() => ({ text: '<answer>\n3\n</answer>' }));
  server.resetStats();
  const args = [file, '--entry', ENTRY, '--base-url', server.url, '--model', 'm', '--cache-dir', path.join(dir, 'cache')];
  assert.equal((await run(args)).code, 0);
  const again = await run(args);
  assert.equal(again.code, 0);
  assert.match(again.stdout, /\(cached\)/);
  assert.equal(server.stats.requests, 1);
});

test('an endpoint error is reported in one line with exit code 1', async () => {
  server.setScript(() => ({ status: 404, json: { error: { message: 'The model `nope` does not exist.' } } }));
  const { code, stderr } = await run([file, '--entry', ENTRY, '--base-url', server.url, '--model', 'nope', '--no-cache']);
  assert.equal(code, 1);
  assert.match(stderr, /does not exist.*check the base URL/);
});

test('mistakes in the command line are usage errors (exit 2)', async () => {
  assert.equal((await run([file, '--entry', ENTRY, '--template', 'nope'])).code, 2);
  assert.equal((await run([file])).code, 2);
  assert.equal((await run([file, '--entry', ENTRY, '--samples', '0'])).code, 2);
  assert.equal((await run([file, '--entry', ENTRY, '--model', 'm'])).code, 2, 'a model without an endpoint');
});
