// The launch configuration: paths resolve the way launch.json users expect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLaunchConfig, toRecordRequest } from '../../src/adapter/launch-config';

const parse = (raw: unknown) => {
  const r = parseLaunchConfig(raw);
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.config;
};

test('a relative program resolves against cwd, and cwd against the workspace folder', () => {
  const req = toRecordRequest(parse({ program: 'src/app.py', cwd: 'proj', entry: 'main()' }), '/ws');
  assert.equal(req.program, '/ws/proj/src/app.py');
  assert.equal(req.cwd, '/ws/proj');
  assert.deepEqual(req.entry, { kind: 'call', expr: 'main()' });
});

test('without cwd the run happens in the program folder; without entry it is a script with args', () => {
  const req = toRecordRequest(parse({ program: 'tools/run.py', args: ['-v'] }), '/ws');
  assert.equal(req.program, '/ws/tools/run.py');
  assert.equal(req.cwd, '/ws/tools');
  assert.deepEqual(req.entry, { kind: 'script', args: ['-v'] });
});

test('entry and script together are rejected with the attribute to fix', () => {
  const r = parseLaunchConfig({ program: 'a.py', entry: 'f()', script: true });
  assert.equal(r.ok, false);
  assert.match(r.ok ? '' : r.message, /"entry" cannot be combined with "script": true/);
});

test('limits are checked: a negative steps limit is refused', () => {
  const r = parseLaunchConfig({ program: 'a.py', limits: { steps: -1 } });
  assert.equal(r.ok, false);
  assert.match(r.ok ? '' : r.message, /"limits\.steps"/);
});
