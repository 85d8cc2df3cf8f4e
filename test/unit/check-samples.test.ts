// `npm run check:samples -- DIR` (execverify/check_samples.py) on a real
// harvest: the demo project harvested by the built CLI (node dist/cli.js),
// then a copy with one sample's recorded result edited, then a sample whose
// result depends on the hash seed. Every run is a real process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { resolvePython } from '../../src/engine/python';

const ROOT = path.resolve(__dirname, '..', '..');
const python = resolvePython(undefined, process.env);
const SUMMARY = /^(\d+) samples, (\d+) re-run equal, (\d+) stable under 3 hash seeds$/m;

function checkSamples(dir: string): { code: number | null; stdout: string; summary: number[] } {
  const run = spawnSync('npm', ['run', '-s', 'check:samples', '--', dir, '--python', python], { cwd: ROOT, encoding: 'utf8' });
  const m = SUMMARY.exec(run.stdout);
  assert.ok(m, `no summary line in: ${run.stdout}\n${run.stderr}`);
  return { code: run.status, stdout: run.stdout, summary: [Number(m[1]), Number(m[2]), Number(m[3])] };
}

function lines(file: string): string[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim());
}

test('check:samples passes a real harvest and fails a copy with one result edited', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-check-samples-'));
  try {
    execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'ignore' });
    const out = path.join(tmp, 'demo');
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'dist', 'cli.js'), 'harvest', path.join(ROOT, 'examples', 'demo-project'), '--out', out, '--no-answers', '--quiet'],
      {
        cwd: ROOT,
        env: { ...process.env, EXECVERIFY_PYTHON: python },
        stdio: 'ignore',
      },
    );
    const stored = lines(path.join(out, 'samples.jsonl'));
    assert.ok(stored.length >= 10, `${stored.length} samples`);

    const good = checkSamples(out);
    assert.equal(good.code, 0, good.stdout);
    assert.deepEqual(good.summary, [stored.length, stored.length, stored.length]);
    assert.equal(good.stdout.trim().split('\n').length, 1, 'nothing but the summary');

    // One sample's recorded result edited: it fails both checks, in one line per failing run.
    const broken = path.join(tmp, 'broken');
    fs.mkdirSync(broken);
    const edited = JSON.parse(stored[3]!) as { entry: string; result: { repr: string; type: string } };
    edited.result.repr = `${edited.result.repr} + 1`;
    fs.writeFileSync(path.join(broken, 'samples.jsonl'), [...stored.slice(0, 3), JSON.stringify(edited), ...stored.slice(4)].join('\n') + '\n');
    const bad = checkSamples(broken);
    assert.equal(bad.code, 1);
    assert.deepEqual(bad.summary, [stored.length, stored.length - 1, stored.length - 1]);
    const failures = bad.stdout.trim().split('\n').slice(0, -1);
    assert.ok(failures.length >= 1 && failures.every((l) => l.includes('samples.jsonl:4 ')), bad.stdout);
    assert.match(failures[0]!, /re-run \(PYTHONHASHSEED=0\) gave .* recorded .* \+ 1/);

    // A result that follows the hash seed: equal under its own seed, not stable under 0, 1, 2.
    const seeded = path.join(tmp, 'seeded');
    fs.mkdirSync(seeded);
    const code = 'def order(words):\n    return list(set(words))\n';
    const entry = `order(${JSON.stringify(Array.from({ length: 12 }, (_, i) => `w${i}`))})`;
    const at0 = execFileSync(python, ['-c', `${code}\nv = ${entry}\nprint(repr(v))`], {
      env: { ...process.env, PYTHONHASHSEED: '0' },
      encoding: 'utf8',
    }).trim();
    const record = {
      code,
      entry,
      result: { repr: at0, type: 'list' },
      trace: { hashSeed: 0, confirmedSeeds: [1, 2] },
      provenance: { file: 'order.py', function: 'order' },
    };
    fs.writeFileSync(path.join(seeded, 'samples.jsonl'), JSON.stringify(record) + '\n');
    const unstable = checkSamples(seeded);
    assert.equal(unstable.code, 1);
    assert.deepEqual(unstable.summary, [1, 1, 0]);
    assert.match(unstable.stdout, /order\.py:order order\(.*PYTHONHASHSEED=[12] gave/);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
