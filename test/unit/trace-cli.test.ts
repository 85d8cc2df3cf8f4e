// `execverify trace` through main(): readable and JSON output, and one clear
// line with a non-zero exit for unknown flags, missing files, syntax errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TraceSchema, TRACE_SCHEMA_VERSION } from '../../src/engine/trace/schema';
import { runCli } from '../support/cli';

const dir = mkdtempSync(join(tmpdir(), 'ev-cli-'));
writeFileSync(join(dir, 'prog.py'), 'def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    print("sum", s)\n    return s\n');
writeFileSync(join(dir, 'bad.py'), 'def f(:\n');

const cli = (...argv: string[]) => runCli(argv, { cwd: dir });

test('prints a readable step-by-step trace', async () => {
  const r = await cli('trace', 'prog.py', '--entry', 'f([1, 2])');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /call f\s+\| xs=\[1, 2\]/);
  assert.match(r.out, /\n\s+\d+\s+4\s+s \+= x/);
  assert.match(r.out, /returned 3\n/);
  assert.match(r.out, /stdout:\nsum 3\n/);
});

test('--json prints the Trace with its schema version', async () => {
  const r = await cli('trace', join(dir, 'prog.py'), '-e', 'f([4])', '--json');
  assert.equal(r.code, 0, r.err);
  const trace = TraceSchema.parse(JSON.parse(r.out));
  assert.equal(trace.schema, TRACE_SCHEMA_VERSION);
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, '4');
});

test('--script runs FILE as __main__ with the words after it as arguments', async () => {
  writeFileSync(join(dir, 'script.py'), 'import sys\nprint(sys.argv[1:])\n');
  const r = await cli('trace', 'script.py', '--script', 'a', 'b', '--args', 'c');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /stdout:\n\['c', 'a', 'b'\]\n/);
});

test('limits are passed through', async () => {
  const r = await cli('trace', 'prog.py', '-e', 'f(range(100))', '--json', '--max-steps', '10');
  const trace = TraceSchema.parse(JSON.parse(r.out));
  assert.equal(trace.steps.length, 10);
  assert.equal(trace.outcome.kind === 'limit' && trace.outcome.limit, 'steps');
});

function oneLine(err: string): void {
  assert.equal(err.trim().split('\n')[0]!.startsWith('execverify trace: '), true, err);
}

test('an unknown flag is a usage error (exit 2)', async () => {
  const r = await cli('trace', 'prog.py', '--entry', 'f([])', '--frobnicate');
  assert.equal(r.code, 2);
  oneLine(r.err);
  assert.match(r.err, /frobnicate/);
});

test('a missing file is one line and exit 1', async () => {
  const r = await cli('trace', 'nope.py', '--entry', 'f()');
  assert.equal(r.code, 1);
  assert.equal(r.err, 'execverify trace: no such file: nope.py\n');
});

test('a syntax error is one line and exit 1', async () => {
  const r = await cli('trace', 'bad.py', '--entry', 'f()');
  assert.equal(r.code, 1);
  assert.equal(r.err.trim().split('\n').length, 1);
  assert.match(r.err, /^execverify trace: .*bad\.py, line 1/);
});

test('no entry, two entries, or a bad limit are usage errors', async () => {
  for (const argv of [
    ['trace', 'prog.py'],
    ['trace', 'prog.py', '--entry', 'f()', '--script'],
    ['trace', 'prog.py', '--entry', 'f()', '--max-steps', 'ten'],
    ['trace'],
  ]) {
    const r = await cli(...argv);
    assert.equal(r.code, 2, argv.join(' '));
    oneLine(r.err);
  }
});
