// Defence in depth for datasets: the sample store refuses any record that
// holds a credential — one the rules know, or the value of a secret-looking
// variable of the harvesting process's environment, whatever its shape — and a
// real harvest never writes such a value to samples.jsonl or an export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../src/cli/main';
import { environmentSecrets } from '../../src/engine/harvest/credentials';
import { readStore, SampleStore, STORE_FILE } from '../../src/engine/dataset/store';
import { sampleInput } from '../support/sample-records';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-secrets-'));
// No rule knows this shape: only the environment says it is a secret.
const TOKEN = 'q9Zr.' + 'unknown-shape' + '.77kk';

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const sink = (append: (s: string) => void) => new Writable({ write: (chunk, _enc, cb) => (append(String(chunk)), cb()) });
  const code = await main(args, {
    stdout: sink(() => undefined),
    stderr: sink((s) => (stderr += s)),
    env,
    cwd: os.tmpdir(),
    signal: new AbortController().signal,
  });
  return { code, stderr };
}

test('a record holding the value of a secret-looking environment variable is refused, whatever its shape', () => {
  const dir = tmp();
  const store = SampleStore.open(dir, { env: { PATH: '/usr/bin', EXECVERIFY_FAKE_TOKEN: TOKEN } });
  try {
    const leaked = sampleInput(1, { result: { repr: `'${TOKEN}'`, type: 'str' } });
    const r = store.add(leaked);
    assert.equal(r.added, false);
    assert.equal(!r.added && r.reason, 'credential');
    assert.match(!r.added ? (r.message ?? '') : '', /environment_secret in result\.repr/);
    assert.ok(!(!r.added && r.message?.includes(TOKEN)), 'the refusal never repeats the secret');
    assert.equal(store.add(sampleInput(2)).added, true, 'a clean record still goes in');
  } finally {
    store.close();
  }
  const text = fs.readFileSync(path.join(dir, STORE_FILE), 'utf8');
  assert.ok(!text.includes(TOKEN));
  assert.equal(readStore(dir).items.length, 1);
});

test("the store's default environment is this process's", () => {
  const dir = tmp();
  process.env.EXECVERIFY_FAKE_TOKEN = TOKEN;
  try {
    const store = SampleStore.open(dir);
    const r = store.add(sampleInput(3, { frames: [{ line: 2, source: '    y = x + 3', event: 'line', fn: 'f3', locals: { x: `'${TOKEN}'` } }] }));
    store.close();
    assert.equal(!r.added && r.reason, 'credential');
    assert.match(!r.added ? (r.message ?? '') : '', /frames\[0\]\.locals\.x/);
  } finally {
    delete process.env.EXECVERIFY_FAKE_TOKEN;
  }
});

test('a credential the rules know is refused in any field, a model answer included', () => {
  const store = SampleStore.open(tmp(), { env: {} });
  try {
    const key = 'sk-' + 'proj-' + 'Xk29fLq0Zr8TnB4vWm7cYp3sHd6gJa1e';
    const r = store.add(sampleInput(4, { answers: [{ model: 'm @ e', text: `the key is ${key}`, reward: 0, rIo: 0, rWhite: 0, breakdown: [] }] }));
    assert.equal(!r.added && r.reason, 'credential');
    assert.match(!r.added ? (r.message ?? '') : '', /openai_key in answers\[0\]\.text/);
  } finally {
    store.close();
  }
});

test('only secret-looking names with values of 8 characters or more count', () => {
  const found = environmentSecrets({
    OPENAI_API_KEY: 'sk-test-abcdefgh',
    GH_TOKEN: 'short',
    DB_PASSWORD: 'correct horse',
    MY_CREDENTIALS_FILE: '/etc/creds.json',
    NPM_AUTH: 'npm_xxxxxxxxxx',
    GIT_AUTHOR_NAME: 'Ada Lovelace',
    HOME: '/home/ada',
    EDITOR: 'vim-or-emacs',
  }).map((s) => s.name);
  assert.deepEqual(found.sort(), ['DB_PASSWORD', 'MY_CREDENTIALS_FILE', 'NPM_AUTH', 'OPENAI_API_KEY']);
});

test('a harvest never writes an environment secret of unknown shape to samples.jsonl or the SFT export', async () => {
  const project = tmp();
  fs.writeFileSync(path.join(project, 'greet.py'), 'def greet(name):\n    return "hello " + name\n\n\ndef double(n):\n    return n * 2\n');
  fs.writeFileSync(
    path.join(project, 'test_greet.py'),
    `import unittest\nfrom greet import greet, double\n\n\nclass T(unittest.TestCase):\n    def test_greet(self):\n        self.assertEqual(greet("${TOKEN}"), "hello ${TOKEN}")\n\n    def test_double(self):\n        self.assertEqual(double(21), 42)\n`,
  );
  const out = tmp();
  const env = { ...process.env, EXECVERIFY_FAKE_TOKEN: TOKEN };
  const run = await cli(['harvest', project, '--out', out, '--quiet', '--no-answers', '--runner', 'unittest'], env);
  assert.equal(run.code, 0, run.stderr);
  const records = readStore(out).items;
  assert.ok(
    records.some((r) => r.provenance.function === 'double'),
    'the clean function is kept',
  );
  assert.ok(!records.some((r) => r.provenance.function === 'greet'), 'the call holding the token is not');
  assert.ok(!fs.readFileSync(path.join(out, STORE_FILE), 'utf8').includes(TOKEN));
  const exported = path.join(out, 'sft');
  const exp = await cli(['export', out, '--format', 'sharegpt', '--out', exported], env);
  assert.equal(exp.code, 0, exp.stderr);
  for (const file of fs.readdirSync(exported)) assert.ok(!fs.readFileSync(path.join(exported, file), 'utf8').includes(TOKEN), file);
  const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8')) as { credentials: { dropped: number } };
  assert.ok(report.credentials.dropped >= 1, 'the drop is counted as a credential');
});
