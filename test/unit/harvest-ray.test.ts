// `execverify harvest --executor`: local stays the default; ray takes several
// projects (its run on a real Ray is python-tracer/tests_venv/test_ray.py);
// wrong uses are usage errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main';

async function run(argv: string[]) {
  const out = new PassThrough();
  const err = new PassThrough();
  let stderr = '';
  err.on('data', (d) => (stderr += d));
  out.resume();
  const code = await main(argv, { stdout: out, stderr: err, env: process.env, cwd: process.cwd(), signal: new AbortController().signal });
  return { code, stderr };
}

test('harvest --executor: an unknown executor, --address without ray, and ray without projects are usage errors', async () => {
  let r = await run(['harvest', 'p', '--out', 'o', '--executor', 'spark']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--executor must be local or ray/);
  r = await run(['harvest', 'p', '--out', 'o', '--address', 'ray://x:10001']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--address applies to --executor ray/);
  r = await run(['harvest', '--executor', 'ray', '--out', 'o']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /one or more PROJECT/);
  r = await run(['harvest', 'a', 'b', '--out', 'o']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /exactly one PROJECT/);
});
