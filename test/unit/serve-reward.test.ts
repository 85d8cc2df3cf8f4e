// `execverify serve-reward` starts the Python reward server: it answers
// OpenRLHF's and slime's requests with reward.py's rewards, takes the token
// from --token or the environment (never onto the child's command line), and
// stops when the CLI is interrupted or killed.
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { main } from '../../src/cli/main';

const TRUTHS = join(__dirname, '..', '..', 'python-tracer', 'tests', 'data', 'exported-truths.jsonl.gz');
const rows = gunzipSync(readFileSync(TRUTHS))
  .toString('utf8')
  .trim()
  .split('\n')
  .slice(0, 3)
  .map((l) => JSON.parse(l) as { label: string; reference: string });

function start(argv: string[], env: NodeJS.ProcessEnv = process.env) {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  err.on('data', (d) => (stderr += d));
  const controller = new AbortController();
  const listening = new Promise<string>((resolve) => {
    out.on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { listening: string }).listening);
    });
  });
  const exit = main(['serve-reward', '--port', '0', '--workers', '1', ...argv], {
    stdout: out,
    stderr: err,
    env,
    cwd: process.cwd(),
    signal: controller.signal,
  });
  return { listening, exit, stop: () => controller.abort(), stderr: () => stderr };
}

test('serve-reward answers OpenRLHF and slime requests with the reward and stops on interrupt', async () => {
  const s = start(['--quiet']);
  const url = await Promise.race([s.listening, s.exit.then((c) => assert.fail(`exited ${c}: ${s.stderr()}`))]);
  const prompts = rows.map((_, i) => `<prompt ${i}>`);
  const res = await fetch(`${url}/get_reward`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: rows.map((r, i) => prompts[i] + r.reference), prompts, labels: rows.map((r) => r.label) }),
  });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { rewards: number[]; scores: number[] };
  assert.deepEqual(body.rewards, [2, 2, 2]);
  assert.deepEqual(body.scores, [1, 1, 1]);
  const one = await fetch(`${url}/reward`, { method: 'POST', body: JSON.stringify({ prompt: 'p', response: 'no answer', label: rows[0]!.label }) });
  assert.deepEqual(((await one.json()) as { reward: number }).reward, 0);
  const bad = await fetch(`${url}/get_reward`, { method: 'POST', body: '{"query": 1}' });
  assert.equal(bad.status, 400);
  s.stop();
  assert.equal(await s.exit, 0);
  assert.match(s.stderr(), /stopped/);
});

test('serve-reward on a non-loopback address refuses to start without a token, and needs it with one', async () => {
  const env = { ...process.env };
  delete env.EXECVERIFY_REWARD_TOKEN;
  const refused = start(['--host', '0.0.0.0'], env);
  assert.equal(await refused.exit, 2);
  assert.match(refused.stderr(), /bearer token is required/);

  const token = 'a-token-long-enough-for-the-server';
  const s = start(['--host', '0.0.0.0', '--token', token], env);
  const url = (await s.listening).replace('0.0.0.0', '127.0.0.1');
  const req = { method: 'POST', body: JSON.stringify({ prompt: 'p', response: rows[0]!.reference, label: rows[0]!.label }) };
  assert.equal((await fetch(`${url}/reward`, req)).status, 401);
  const ok = await fetch(`${url}/reward`, { ...req, headers: { authorization: `Bearer ${token}` } });
  assert.equal(((await ok.json()) as { reward: number }).reward, 2);
  s.stop();
  assert.equal(await s.exit, 0);
  assert.ok(!s.stderr().includes(token), 'the token is never logged');
});

test('the Python server stops when the CLI that started it is killed outright (SIGKILL)', async () => {
  const root = join(__dirname, '..', '..');
  const cli = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'serve-reward', '--port', '0', '--workers', '1', '--quiet'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    cli.stdout.on('data', (d) => {
      out += d;
      if (out.includes('listening')) resolve();
    });
    cli.once('exit', (code) => reject(new Error(`the CLI exited ${code} before listening`)));
  });
  const server = readFileSync(`/proc/${cli.pid}/task/${cli.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  assert.equal(server.length, 1, 'the CLI started one server process');
  cli.kill('SIGKILL');
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '); // a zombie has exited
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 600 && alive(server[0]!); i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(alive(server[0]!), false, 'the server outlived its CLI');
});
