// Two harvests on one --out: the second is refused in one clear line with a
// non-zero exit and touches nothing; the first completes with all its
// records; a lock left by a dead harvest is taken over, with a message. Real
// CLI processes, ordered by events (a lock file's content, a file the
// project's own test waits for), never by timing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readStore, SampleStore, STORE_FILE } from '../../src/engine/dataset/store';

const ROOT = path.resolve(__dirname, '..', '..');
const CLI = path.join(ROOT, 'src', 'cli', 'main.ts');
const HOLDER = path.join(ROOT, 'test', 'support', 'store-holder.ts');
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-lock-'));

/** A project whose test waits until `go` exists: a harvest of it holds its lock as long as the test needs. */
function project(): { dir: string; go: string } {
  const dir = tmp();
  const go = path.join(dir, 'go');
  fs.writeFileSync(path.join(dir, 'calc.py'), 'def add(a, b):\n    return a + b\n\n\ndef neg(x):\n    return -x\n');
  fs.writeFileSync(
    path.join(dir, 'test_calc.py'),
    'import os\nimport time\nimport unittest\nfrom calc import add, neg\n\n\nclass T(unittest.TestCase):\n' +
      `    def test_calc(self):\n        while not os.path.exists(${JSON.stringify(go)}):\n            time.sleep(0.01)\n` +
      '        self.assertEqual(add(2, 3), 5)\n        self.assertEqual(neg(4), -4)\n',
  );
  return { dir, go };
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function start(args: string[]): { child: ChildProcess; done: Promise<Ran> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Ran>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

const harvestArgs = (dir: string, out: string) => ['harvest', dir, '--out', out, '--quiet', '--no-answers', '--runner', 'unittest', '--jobs', '1'];

/** Resolves once `file` holds `text` (the lock file naming its holder); checks again on every change. */
async function until(file: string, text: string, exited: Promise<unknown>): Promise<void> {
  let stop = false;
  void exited.then(() => (stop = true));
  for (;;) {
    try {
      if (fs.readFileSync(file, 'utf8').trim() === text) return;
    } catch {
      // not there yet
    }
    if (stop) throw new Error(`${file} never held ${text}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A pid that ran and exited: no process holds it now. */
async function deadPid(): Promise<number> {
  const p = spawn(process.execPath, ['-e', '']);
  await new Promise((r) => p.once('exit', r));
  return p.pid!;
}

test('a second harvest on the same --out is refused in one line, and the first completes with all its records', async () => {
  const { dir, go } = project();
  const out = tmp();
  const first = start(harvestArgs(dir, out));
  await until(path.join(out, 'samples.lock'), String(first.child.pid), first.done);

  const second = await start(harvestArgs(dir, out)).done;
  assert.notEqual(second.code, 0);
  const lines = second.stderr.trim().split('\n');
  assert.equal(lines.length, 1, second.stderr);
  assert.match(
    lines[0]!,
    new RegExp(`^execverify harvest: another process \\(pid ${first.child.pid}\\) is writing to .*; wait for it to finish or use another --out`),
  );
  assert.doesNotMatch(second.stderr, /\n\s+at /, 'no stack trace');

  fs.writeFileSync(go, '');
  const ran = await first.done;
  assert.equal(ran.code, 0, ran.stderr);
  const functions = readStore(out)
    .items.map((r) => r.provenance.function)
    .sort();
  assert.deepEqual(functions, ['add', 'neg'], 'the first harvest stored every record');
  assert.equal(fs.existsSync(path.join(out, 'samples.lock')), false, 'the lock is given back');
});

test('a harvest refused by a live lock writes nothing to the directory', async () => {
  const { dir, go } = project();
  fs.writeFileSync(go, '');
  const out = tmp();
  const held = SampleStore.open(out); // this process is the live writer
  const before = fs.readdirSync(out).sort();
  const refused = await start(harvestArgs(dir, out)).done;
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`another process \\(pid ${process.pid}\\) is writing`));
  assert.deepEqual(fs.readdirSync(out).sort(), before, 'no work/, report or drops file appeared');
  held.close();
  const after = await start(harvestArgs(dir, out)).done;
  assert.equal(after.code, 0, after.stderr);
  assert.equal(readStore(out).items.length, 2);
});

test("a dead harvest's lock is taken over with a message, and the harvest completes", async () => {
  const { dir, go } = project();
  fs.writeFileSync(go, '');
  const out = tmp();
  const pid = await deadPid();
  fs.writeFileSync(path.join(out, 'samples.lock'), String(pid));
  const ran = await start(harvestArgs(dir, out)).done;
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(ran.stderr, new RegExp(`^warning: took over the lock of .*: the harvest that held it \\(pid ${pid}\\) is no longer running`, 'm'));
  assert.equal(readStore(out).items.length, 2);
  assert.ok(fs.readFileSync(path.join(out, STORE_FILE), 'utf8').endsWith('\n'));
  assert.equal(fs.existsSync(path.join(out, 'samples.lock')), false);
});

test('of several processes that find the same stale lock, exactly one takes it over', async () => {
  const out = tmp();
  fs.writeFileSync(path.join(out, 'samples.lock'), String(await deadPid()));
  const holders = Array.from({ length: 4 }, () => spawn(process.execPath, ['--import', 'tsx', HOLDER, out], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] }));
  // Each answers once it has tried, and keeps what it got until its stdin closes.
  const answers = await Promise.all(
    holders.map(
      (h) =>
        new Promise<string>((resolve) => {
          let text = '';
          h.stdout!.on('data', (d: Buffer) => {
            text += d.toString();
            if (text.includes('\n')) resolve(text.trim());
          });
        }),
    ),
  );
  for (const h of holders) h.stdin!.end();
  await Promise.all(holders.map((h) => new Promise((r) => h.once('exit', r))));
  assert.equal(answers.filter((a) => a.startsWith('held')).length, 1, answers.join(' | '));
  assert.deepEqual(
    answers.filter((a) => !a.startsWith('held')),
    ['busy StoreBusyError', 'busy StoreBusyError', 'busy StoreBusyError'],
  );
  assert.equal(fs.existsSync(path.join(out, 'samples.lock')), false);
});
