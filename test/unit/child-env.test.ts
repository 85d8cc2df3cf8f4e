// Secrets never reach children: the tracer worker and the programs it traces,
// a harvested project's tests and git start with an explicit, minimal
// environment — whatever this process holds (API keys, tokens, editor state).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn as nodeSpawn, type SpawnOptions } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { codeEnv, gitEnv, minimalEnv, NEUTRAL_HOME } from '../../src/engine/child-env';
import { readCaptured, runHarvestPython } from '../../src/engine/harvest/python-harvest';
import { discoverProject, runGit } from '../../src/engine/harvest/project';
import { pythonTracerDir, resolvePython, workerEnv } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';

// Fake secrets in this process's own environment, as an editor or a shell would hold them.
const SECRETS: Record<string, string> = {
  OPENAI_API_KEY: 'sk-test-' + 'Qm7vX2pL9rT4wZ8nB3cJ6hY1',
  EXECVERIFY_FAKE_TOKEN: 'tok_' + Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2),
  VSCODE_GIT_IPC_HANDLE: '/run/user/1000/vscode-git-' + 'a81f.sock',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI' + '/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const saved: Record<string, string | undefined> = {};
before(() => {
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
after(() => {
  for (const k of Object.keys(SECRETS)) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

function assertNoSecret(text: string, where: string, names = true): void {
  for (const [name, value] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(value), `${where} holds the value of ${name}`);
    if (names) assert.ok(!text.includes(name), `${where} names ${name}`);
  }
}

const PRINT_ENV = 'import os\n\ndef f():\n    env = dict(os.environ)\n    print(env)\n    return sorted(env)\n';

/** The real spawn, observed: the environment each worker process is started with. */
function observedSpawn() {
  const envs: NodeJS.ProcessEnv[] = [];
  const spawn = ((command: string, args: string[], options: SpawnOptions) => {
    envs.push({ ...options.env });
    return nodeSpawn(command, args, options);
  }) as unknown as NonNullable<ConstructorParameters<typeof TracerPool>[0]>['spawn'];
  return { envs, spawn };
}

test("a program traced through the real TracerPool sees none of the parent environment's secrets", async () => {
  const observed = observedSpawn();
  const pool = new TracerPool({ size: 1, spawn: observed.spawn }); // env: process.env, secrets included
  try {
    const trace = await pool.trace({ path: 'env.py', source: PRINT_ENV, entry: { kind: 'call', expr: 'f()' } });
    assert.equal(trace.outcome.kind, 'returned', JSON.stringify(trace.outcome));
    assert.match(trace.stdout.text, /'PATH'/, 'the program ran and printed its environment');
    assertNoSecret(JSON.stringify(trace), 'the trace');
    assert.ok(!trace.stdout.text.includes(`'HOME': '${os.homedir()}'`), "HOME is not the user's");
    // What this layer hands the worker process, before any isolation inside it.
    assert.equal(observed.envs.length, 1);
    assertNoSecret(JSON.stringify(observed.envs[0]), 'the worker process environment');
    assert.equal(observed.envs[0]!.HOME, NEUTRAL_HOME);
    assert.equal(observed.envs[0]!.PATH, process.env.PATH);
  } finally {
    await pool.close();
  }
});

test('variables the user gave the programs (jobEnv) go to the worker; nothing else of the parent does', async () => {
  const observed = observedSpawn();
  const pool = new TracerPool({ size: 1, spawn: observed.spawn, env: { ...process.env, LAUNCH_ONLY: 'not-given' }, jobEnv: { DBG_GREETING: 'hello' } });
  try {
    const source = 'import os\n\ndef f():\n    return (os.environ.get("LAUNCH_ONLY"), os.environ.get("OPENAI_API_KEY"))\n';
    const trace = await pool.trace({ path: 'given.py', source, entry: { kind: 'call', expr: 'f()' } });
    assert.deepEqual(trace.outcome.kind === 'returned' && trace.outcome.value.repr, '(None, None)');
    assert.equal(observed.envs[0]!.DBG_GREETING, 'hello');
    assert.equal(observed.envs[0]!.LAUNCH_ONLY, undefined);
  } finally {
    await pool.close();
  }
});

test("a harvested project's tests run without the parent environment's secrets", async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ev-env-project-'));
  fs.writeFileSync(path.join(root, 'probe.py'), 'import os\n\ndef probe(name):\n    return os.environ.get(name, "absent")\n');
  fs.writeFileSync(
    path.join(root, 'test_probe.py'),
    'import unittest\nfrom probe import probe\n\nclass T(unittest.TestCase):\n' +
      '    def test_env(self):\n' +
      '        probe("OPENAI_API_KEY")\n        probe("EXECVERIFY_FAKE_TOKEN")\n        probe("HOME")\n',
  );
  const out = path.join(root, 'calls.jsonl');
  await runHarvestPython(['capture', '--root', root, '--out', out, '--runner', 'unittest'], {
    python: resolvePython(undefined, process.env),
    tracerDir: pythonTracerDir(),
    env: process.env,
    cwd: root,
    timeoutMs: 60_000,
  });
  const { calls } = readCaptured(out);
  const seen = Object.fromEntries(calls.map((c) => [c.entry, c.result]));
  assert.equal(seen["probe('OPENAI_API_KEY')"], "'absent'");
  assert.equal(seen["probe('EXECVERIFY_FAKE_TOKEN')"], "'absent'");
  assert.ok(seen["probe('HOME')"] && seen["probe('HOME')"] !== `'${os.homedir()}'`, `HOME is neutral: ${seen["probe('HOME')"]}`);
  assertNoSecret(fs.readFileSync(out, 'utf8'), 'the captured calls', false); // the calls name them, of course
});

test('git for provenance gets its own environment: a GIT_DIR in this process does not mislead it', async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'ev-env-git-'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env: gitEnv(process.env), stdio: 'pipe' });
  git('init', '-q');
  git('-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'first');
  const head = git('rev-parse', 'HEAD').toString().trim();
  const savedDir = process.env.GIT_DIR;
  process.env.GIT_DIR = path.join(os.tmpdir(), 'no-such-git-dir');
  try {
    assert.equal(await runGit(['rev-parse', 'HEAD'], repo), head);
    assert.equal((await discoverProject(repo)).commit, head);
  } finally {
    if (savedDir === undefined) delete process.env.GIT_DIR;
    else process.env.GIT_DIR = savedDir;
  }
});

test('the minimal environment is an allow-list: names of any shape are left behind', () => {
  const parent = {
    PATH: '/usr/bin',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TZ: 'UTC',
    TMPDIR: '/tmp/x',
    HOME: '/home/me',
    ...SECRETS,
    GITHUB_TOKEN: 'ghp_x',
    ELECTRON_RUN_AS_NODE: '1',
  };
  assert.deepEqual(minimalEnv(parent, 'linux'), { PATH: '/usr/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', TZ: 'UTC', TMPDIR: '/tmp/x' });
  assert.deepEqual(codeEnv(parent, { GIVEN: '1' }, 'linux'), {
    PATH: '/usr/bin',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TZ: 'UTC',
    TMPDIR: '/tmp/x',
    HOME: NEUTRAL_HOME,
    GIVEN: '1',
  });
  assert.equal(gitEnv(parent, 'linux').HOME, '/home/me', "git reads the user's own ~/.gitconfig");
  assert.equal(gitEnv(parent, 'linux').GITHUB_TOKEN, undefined);
  const win = minimalEnv({ Path: 'C:\\Windows', SystemRoot: 'C:\\Windows', TEMP: 'C:\\t', USERPROFILE: 'C:\\Users\\me', ...SECRETS }, 'win32');
  assert.deepEqual(win, { Path: 'C:\\Windows', SystemRoot: 'C:\\Windows', TEMP: 'C:\\t' });
  const worker = workerEnv({ ...parent, PYTHONPATH: '/proj/src', PYTHONSTARTUP: '/home/me/.pythonrc' }, '/ext/python-tracer', {}, 'linux');
  assert.equal(worker.PYTHONPATH, '/ext/python-tracer:/proj/src');
  assert.equal(worker.PYTHONSTARTUP, undefined);
  assertNoSecret(JSON.stringify(worker), 'the worker environment');
  const given = workerEnv(parent, '/ext/python-tracer', { PROJECT_DB: 'sqlite://x', PYTHONPATH: '/given' }, 'linux');
  assert.equal(given.PROJECT_DB, 'sqlite://x');
  assert.equal(given.PYTHONPATH, '/ext/python-tracer:/given', 'the tracer stays importable');
});
