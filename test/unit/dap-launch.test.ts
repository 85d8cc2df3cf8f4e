// A replay launch configuration with `"via": "debugpy"`: the replay adapter
// records the call through the real debugpy (src/engine/dap/) and replays
// that trace like any other — stepping, locals, the recording it reports.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseLaunchConfig, toRecordRequest } from '../../src/adapter/launch-config';
import { DapRequests } from '../../src/adapter/dap-protocol';
import { LiveEngine } from '../../src/server/live-engine';
import { parseSettings } from '../../src/server/protocol';
import { closePool, launch, locals, move, program, REPO, startAdapter, where } from '../adapter/harness';

const PYTHON = path.join(REPO, '.venv/bin/python');
after(closePool);
const silentLog = () => undefined;

test('"via" is checked: debugpy only, and only with an entry call', () => {
  const bad = parseLaunchConfig({ program: 'a.py', via: 'gdb', entry: 'f()' });
  assert.equal(bad.ok, false);
  assert.match(!bad.ok ? bad.message : '', /"via"/);
  const noEntry = parseLaunchConfig({ program: 'a.py', via: 'debugpy' });
  assert.equal(noEntry.ok, false);
  assert.match(!noEntry.ok ? noEntry.message : '', /"via" records a call/);
  const ok = parseLaunchConfig({ program: 'a.py', via: 'debugpy', entry: 'f()' });
  assert.ok(ok.ok);
  assert.equal(toRecordRequest(ok.ok ? ok.config : ({} as never), '/ws').via, 'debugpy');
});

test('a session launched with "via": "debugpy" replays the run debugpy recorded', async () => {
  const a = await startAdapter();
  try {
    const stop = await launch(a, {
      program: program('dbg_calls.py'),
      entry: 'sum_squares([2, 3])',
      via: 'debugpy',
      python: PYTHON,
      stopOnEntry: true,
      limits: { wallTimeMs: 120_000 },
    });
    assert.equal(stop.body.reason, 'entry');
    // The recording is debugpy's: run under the debugger, not in the sandbox.
    const info = (await a.dc.customRequest(DapRequests.trace, { full: true })).body as { trace?: { python: { isolation?: string } } };
    assert.equal(info.trace?.python.isolation, 'none');
    const lines = [(await where(a)).line];
    while (lines[lines.length - 1] !== 10 && lines.length < 6) {
      await move(a, 'next');
      lines.push((await where(a)).line);
    }
    assert.deepEqual(lines.slice(-3), [8, 9, 10], `lines stepped: ${lines.join(', ')}`);
    const vars = await locals(a);
    assert.equal(vars.v?.value, '2');
    assert.equal(vars.total?.value, '0');
    await move(a, 'stepIn');
    assert.equal((await where(a)).fn, 'square');
  } finally {
    await a.close();
  }
});

test('the engine server records "via": "debugpy" from the saved file, and refuses an unsaved buffer', async () => {
  const engine = new LiveEngine({ log: silentLog, env: process.env });
  const file = program('dbg_loop.py');
  const source = readFileSync(file, 'utf8');
  const settings = parseSettings({ pythonPath: PYTHON, limits: { wallTimeMs: 120_000 } });
  const request = {
    file,
    source,
    entry: { kind: 'call' as const, expr: 'accumulate(2)' },
    cwd: undefined,
    env: undefined,
    python: undefined,
    limits: undefined,
    via: 'debugpy' as const,
    settings,
  };
  try {
    const trace = await engine.trace(request, new AbortController().signal);
    assert.equal(trace.python?.isolation, 'none');
    assert.deepEqual(trace.outcome, { kind: 'returned', value: { repr: '1', type: 'int', literal: true } });
    await assert.rejects(engine.trace({ ...request, source: source + '\n# edited\n' }, new AbortController().signal), /save it first/);
  } finally {
    await engine.close();
  }
});
