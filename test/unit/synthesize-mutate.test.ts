// `execverify harvest … --mutate N` on a project whose test reaches one branch
// of four: the mutated inputs reach the others, join the store with the
// project's provenance, and every one re-runs to its recorded result.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { main } from '../../src/cli/main';
import { readStore } from '../../src/engine/dataset/store';
import { TracerPool } from '../../src/engine/trace/runner';

const ROOT = path.resolve(__dirname, '..', '..');
const PROJECT = path.join(ROOT, 'test', 'fixtures', 'synthesize', 'branchy-project');

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) => new Writable({ write: (chunk, _enc, cb) => (append(String(chunk)), cb()) });
  const code = await main(args, {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    env: process.env,
    cwd: ROOT,
    signal: new AbortController().signal,
  });
  return { code, stdout, stderr };
}

test('harvest --mutate adds samples that reach the branches the tests did not, each reproducing', async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-mutate-'));
  const pool = new TracerPool({ size: 1 });
  try {
    const r = await cli(['harvest', PROJECT, '--out', out, '--no-answers', '--quiet', '--mutate', '12']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /mutation: \d+ mutated inputs tried, [1-9]\d* kept/);
    const records = readStore(out).items;
    const base = records.filter((x) => !x.provenance.synthesis);
    const mutated = records.filter((x) => x.provenance.synthesis?.source === 'mutated');
    assert.deepEqual(
      base.map((x) => x.entry),
      ['grade(95, 0)'],
    );
    assert.ok(mutated.length >= 1, 'at least one mutated input reached a new branch');
    const letters = new Set(records.map((x) => x.result.repr));
    assert.ok(letters.size >= 2, `results reached: ${[...letters].join(', ')}`);
    for (const m of mutated) {
      assert.equal(m.provenance.project, base[0]!.provenance.project);
      assert.equal(m.provenance.function, 'grade');
      assert.equal(m.provenance.synthesis?.from, 'grade(95, 0)');
      assert.equal(m.provenance.synthesis?.level, null);
      assert.equal(m.split, base[0]!.split, 'a mutated sample stays in its function’s split');
      const again = await pool.trace({ path: 'grades.py', source: m.code, entry: { kind: 'call', expr: m.entry } });
      assert.equal(again.outcome.kind === 'returned' && again.outcome.value.repr, m.result.repr, `${m.entry} reproduces`);
    }
    // Run again: everything is decided, nothing is added.
    const again = await cli(['harvest', PROJECT, '--out', out, '--no-answers', '--quiet', '--mutate', '12']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(readStore(out).items.length, records.length);
  } finally {
    await pool.close();
    fs.rmSync(out, { recursive: true, force: true });
  }
});
