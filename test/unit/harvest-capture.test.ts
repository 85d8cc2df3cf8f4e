// The harvest's test run, driven through the real CLI: an interrupted capture
// is continued (never reused as complete), the CLI's death by SIGTERM, SIGINT
// or SIGKILL leaves no process behind (checked from outside, in /proc), an
// old Python is refused in one line, and collection errors are the final message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const CLI = path.join(ROOT, 'src', 'cli', 'main.ts');
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'harvest');
const linux = process.platform === 'linux';

function fixture(name: string): string {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-capture-')), name);
  fs.cpSync(path.join(FIXTURES, name), dir, { recursive: true });
  return dir;
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

function start(args: string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; done: Promise<Ran> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const done = new Promise<Ran>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })));
  return { child, done };
}

/** Live processes (pid, command line) read from /proc, zombies left out. */
function processes(): { pid: number; ppid: number; cmdline: string }[] {
  const out: { pid: number; ppid: number; cmdline: string }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      out.push({ pid: Number(entry), ppid: Number(fields[1]), cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function descendants(pid: number): number[] {
  const all = processes();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift()!;
    for (const c of all.filter((x) => x.ppid === p)) {
      found.push(c.pid);
      queue.push(c.pid);
    }
  }
  return found;
}

async function waitFor<T>(fn: () => T, seconds: number): Promise<T> {
  const end = Date.now() + seconds * 1000;
  for (;;) {
    const v = fn();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const FAST = ['--no-answers', '--quiet', '--jobs', '1'];

test('an interrupted capture is continued by the same command, never reused as complete', async () => {
  const project = fixture('interrupted');
  const out = path.join(path.dirname(project), 'out');
  // --max-time cuts the second test (it waits for `go`): the harvest goes on with what it has.
  const first = await start(['harvest', project, '--out', out, '--max-time', '4', ...FAST]).done;
  assert.equal(first.code, 0, first.stderr);
  const calls = () =>
    fs
      .readFileSync(path.join(out, 'work', 'calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  let summary = calls().at(-1);
  assert.equal(summary.interrupted, true);
  assert.deepEqual(summary.testsDone, ['test_calc.A.test_double']);

  fs.writeFileSync(path.join(project, 'go'), '');
  const second = await start(['harvest', project, '--out', out, '--max-time', '60', ...FAST]).done;
  assert.equal(second.code, 0, second.stderr);
  const lines = calls();
  summary = lines.at(-1);
  assert.equal(summary.complete, true);
  assert.equal(summary.resumed, true);
  assert.equal(summary.testsRun, 2);
  assert.deepEqual(
    lines
      .filter((l) => l.kind === 'call')
      .map((l) => l.entry)
      .sort(),
    ['double(2)', 'triple(3)'],
  );
  // The build follows the calls it was made from.
  const built = fs.readFileSync(path.join(out, 'work', 'built.jsonl'), 'utf8');
  assert.match(built, /"entry": "triple\(3\)"/);
  fs.rmSync(path.dirname(project), { recursive: true, force: true });
});

for (const sandbox of ['on', 'off']) {
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGKILL'] as const) {
    test(`the CLI killed by ${sig} leaves no process behind (sandbox ${sandbox})`, { skip: !linux }, async () => {
      const project = fixture('interrupted');
      const out = path.join(path.dirname(project), 'out');
      const env = { ...process.env, ...(sandbox === 'off' ? { EXECVERIFY_SANDBOX: 'off' } : {}) };
      const cli = start(['harvest', project, '--out', out, ...FAST], env);
      // The second test has started its grandchild: the capture is in full swing.
      const grandchild = await waitFor(() => processes().find((p) => p.cmdline.includes(`execverify-grandchild ${project}`)), 120);
      assert.ok(grandchild, 'the capture reached its second test');
      const tree = descendants(cli.child.pid!);
      assert.ok(tree.length >= 2, 'the CLI has a harvest child');
      cli.child.kill(sig);
      await cli.done;
      const alive = () => {
        const live = processes();
        return live.filter((p) => tree.includes(p.pid) || p.cmdline.includes(project));
      };
      const left = await waitFor(() => (alive().length === 0 ? [] : null), 30);
      assert.deepEqual(left ?? alive().map((p) => `${p.pid} ${p.cmdline}`), []);
      fs.rmSync(path.dirname(project), { recursive: true, force: true });
    });
  }
}

test('a Python older than 3.8 is refused in one line before anything runs', { skip: !linux }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-oldpy-'));
  const python = path.join(dir, 'python3.7');
  fs.writeFileSync(python, '#!/bin/sh\nprintf 3.7.17\n', { mode: 0o755 });
  const run = await start(['harvest', path.join(FIXTURES, 'interrupted'), '--out', path.join(dir, 'out'), '--python', python, ...FAST]).done;
  assert.equal(run.code, 1);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, /is Python 3\.7\.17: harvesting needs Python 3\.8 or newer/);
  assert.ok(!fs.existsSync(path.join(dir, 'out', 'work', 'calls.jsonl')));
  fs.rmSync(dir, { recursive: true, force: true });
});

test('when every test module fails to import, the final message says why (not "no tests ran")', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-broken-'));
  fs.writeFileSync(path.join(dir, 'calc.py'), 'def add(a, b):\n    return a + b\n');
  fs.writeFileSync(path.join(dir, 'test_calc.py'), 'import unittest\nimport numpy_is_not_here\nimport calc\n');
  const run = await start(['harvest', dir, '--out', path.join(dir, 'out'), ...FAST]).done;
  assert.equal(run.code, 1);
  assert.match(run.stderr, /no tests ran: 1 test module\(s\) could not be collected \(unittest\)/);
  assert.match(run.stderr, /test_calc: ModuleNotFoundError: No module named 'numpy_is_not_here'/);
  fs.rmSync(dir, { recursive: true, force: true });
});
