// A project no one here wrote: CPython's own pure-Python bisect and heapq,
// driven by their own unittest suites, copied from this machine's Python into
// a temp dir. Every kept sample must re-run standalone with the recorded result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { main } from '../../src/cli/main';
import { readStore } from '../../src/engine/dataset/store';
import { resolvePython } from '../../src/engine/python';
import { samplesThatDoNotReproduce } from '../support/standalone-rerun';
import type { HarvestReport } from '../../src/engine/harvest/report';

const python = resolvePython(undefined, process.env);
const MODULES = ['bisect', 'heapq'];

test('harvesting bisect and heapq with their own test suites keeps only samples that re-run standalone', async (t) => {
  const stdlib = execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["stdlib"])'], { encoding: 'utf8' }).trim();
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-stdlib-'));
  for (const m of MODULES) {
    const module = path.join(stdlib, `${m}.py`);
    const suite = path.join(stdlib, 'test', `test_${m}.py`);
    assert.ok(fs.existsSync(module) && fs.existsSync(suite), `${python} has no ${m}.py or test/test_${m}.py under ${stdlib}`);
    fs.copyFileSync(module, path.join(project, `${m}.py`));
    fs.copyFileSync(suite, path.join(project, `test_${m}.py`));
  }
  const out = path.join(project, '..', `${path.basename(project)}-out`);
  let stdout = '';
  let stderr = '';
  const code = await main(['harvest', project, '--out', out, '--no-answers', '--per-function', '4', '--json'], {
    stdout: new Writable({ write: (c, _e, cb) => ((stdout += String(c)), cb()) }),
    stderr: new Writable({ write: (c, _e, cb) => ((stderr += String(c)), cb()) }),
    env: process.env,
    cwd: process.cwd(),
    signal: new AbortController().signal,
  });
  assert.equal(code, 0, stderr);
  const report = JSON.parse(stdout) as HarvestReport;
  const records = readStore(out).items;
  t.diagnostic(
    `stdlib harvest (${MODULES.join(', ')}): ${report.tests.run} tests, ${report.funnel[0]!.count} literal calls, ${records.length} samples from ${report.functions} functions`,
  );
  assert.ok(report.tests.run! > 20, 'the suites ran');
  assert.ok(records.length >= 20, `${records.length} samples`);
  const fns = new Set(records.map((r) => r.provenance.function));
  for (const f of ['bisect_left', 'bisect_right', 'heappush', 'heappop', 'nsmallest']) assert.ok(fns.has(f), f);
  assert.ok(records.every((r) => MODULES.includes(r.provenance.file.replace(/\.py$/, ''))));

  // Re-run every kept sample in a fresh isolated interpreter, away from the project.
  assert.deepEqual(samplesThatDoNotReproduce(python, records), []);
  // The samples are the pure-Python definitions, not the C accelerator.
  const push = records.find((r) => r.provenance.function === 'heappush')!;
  assert.match(push.code, /def _siftdown\(/);
  assert.doesNotMatch(push.code, /_heapq/);
  fs.rmSync(project, { recursive: true, force: true });
  fs.rmSync(out, { recursive: true, force: true });
});
