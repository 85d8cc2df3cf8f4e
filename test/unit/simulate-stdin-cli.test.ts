// Programs that read standard input, end to end: `execverify trace --stdin
// PATH` and the TracerPool's `stdin` job field reach a real worker (inside the
// OS sandbox), the program reads it through fd 0, the trace records it, and
// input that is too large, not text or missing is refused with one clear line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolvePython } from '../../src/engine/python';
import { TracerError, TracerPool } from '../../src/engine/trace/runner';
import { TraceSchema } from '../../src/engine/trace/schema';
import { runCli } from '../support/cli';

const dir = mkdtempSync(join(tmpdir(), 'ev-stdin-'));
writeFileSync(
  join(dir, 'sum.py'),
  'n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs[:n]))\ntry:\n    input()\nexcept EOFError:\n    print("eof")\n',
);
writeFileSync(join(dir, 'in.txt'), '2\n5 6 7\n');
writeFileSync(join(dir, 'latin1.txt'), Buffer.from([0x66, 0xe9, 0x0a]));

const cli = (...argv: string[]) => runCli(argv, { cwd: dir });

test('trace --stdin PATH feeds the file to the script and records it in the trace', async () => {
  const r = await cli('trace', 'sum.py', '--script', '--stdin', 'in.txt', '--json');
  assert.equal(r.code, 0, r.err);
  const trace = TraceSchema.parse(JSON.parse(r.out));
  assert.deepEqual(trace.stdin, { text: '2\n5 6 7\n' });
  assert.equal(trace.stdout.text, '11\neof\n');
  assert.equal(trace.outcome.kind, 'returned');
});

test('trace without --stdin: a read is the stdin limit, and the trace has no stdin', async () => {
  const r = await cli('trace', 'sum.py', '--script', '--json');
  assert.equal(r.code, 0, r.err);
  const trace = TraceSchema.parse(JSON.parse(r.out));
  assert.equal(trace.stdin, undefined);
  assert.equal(trace.outcome.kind === 'limit' && trace.outcome.limit, 'stdin');
});

test('trace --stdin over --stdin-bytes is refused before the run, in one line', async () => {
  const r = await cli('trace', 'sum.py', '--script', '--stdin', 'in.txt', '--stdin-bytes', '4');
  assert.equal(r.code, 1);
  assert.match(r.err, /^execverify trace: stdin is 8 bytes, more than the stdinBytes limit \(4\)/);
  assert.equal(r.out, '');
});

test('trace --stdin of a missing or non-UTF-8 file is one clear line', async () => {
  const missing = await cli('trace', 'sum.py', '--script', '--stdin', 'nope.txt');
  assert.equal(missing.code, 1);
  assert.equal(missing.err, 'execverify trace: --stdin nope.txt: no such file\n');
  const latin = await cli('trace', 'sum.py', '--script', '--stdin', 'latin1.txt');
  assert.equal(latin.code, 1);
  assert.match(latin.err, /^execverify trace: --stdin latin1.txt: not UTF-8 text/);
});

test('the pool traces stdin jobs in a batch, each with its own input', async () => {
  const pool = new TracerPool({ python: resolvePython(undefined, process.env), size: 1, env: process.env });
  try {
    const source = 'import sys\nprint(sorted(sys.stdin.read().split()))\n';
    const inputs = ['b a\n', '', 'z\ny\nx', '€ é\n'];
    const traces = await pool.traceMany(inputs.map((stdin) => ({ source, entry: { kind: 'script' as const, args: [] }, stdin })));
    const printed = traces.map((t) => (t instanceof TracerError ? t.message : t.stdout.text));
    assert.deepEqual(printed, ["['a', 'b']\n", '[]\n', "['x', 'y', 'z']\n", "['é', '€']\n"]);
    // Larger than a pipe's buffer, through the worker's own job path (the fork server's children too).
    const lines = Array.from({ length: 200_000 }, (_x, i) => `${i}\n`).join('');
    const big = (await pool.traceMany([{ source: 'import sys\nprint(sum(map(int, sys.stdin)))\n', entry: { kind: 'script', args: [] }, stdin: lines }]))[0]!;
    if (big instanceof TracerError) assert.fail(big.message);
    assert.equal(big.stdout.text, `${(199_999 * 200_000) / 2}\n`);
    const huge = await pool.traceMany([{ source, entry: { kind: 'script', args: [] }, stdin: 'x'.repeat(9 * 1024 * 1024) }]);
    assert.ok(huge[0] instanceof TracerError);
    assert.equal(huge[0].code, 'bad_entry');
    assert.match(huge[0].message, /stdinBytes limit \(8388608\)/);
  } finally {
    await pool.close();
  }
});
