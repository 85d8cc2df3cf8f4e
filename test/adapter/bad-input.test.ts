// Bad input never crashes the adapter: each case prints one clear message to
// the Debug Console and ends the session with a terminated event.
import { after, afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { closePool, program, startSession, startAdapter, type Adapter } from './harness';

let current: Adapter | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});
after(closePool);

/** Launches with a config that cannot be replayed; returns what the Debug Console showed. */
async function launchExpectingEnd(config: Record<string, unknown>): Promise<{ important: string; events: string[] }> {
  const a = (current = await startAdapter());
  await a.dc.initializeRequest({ adapterID: 'execverify', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const terminated = a.dc.waitForEvent('terminated');
  await a.dc.launchRequest({ type: 'execverify', request: 'launch', name: 'bad', ...config } as DebugProtocol.LaunchRequestArguments);
  await terminated;
  const important = a.events
    .filter((e) => e.event === 'output' && e.body.category === 'important')
    .map((e) => e.body.output)
    .join('');
  return { important, events: a.events.map((e) => e.event) };
}

test('a missing program says which file is missing and ends the session', async () => {
  const { important, events } = await launchExpectingEnd({ program: program('dbg_does_not_exist.py') });
  assert.match(important, /Cannot read the program .*dbg_does_not_exist\.py\. Set "program"/);
  assert.ok(!events.includes('initialized'), 'nothing to configure when there is nothing to replay');
});

test('a syntax error names the line and ends the session', async () => {
  const { important } = await launchExpectingEnd({ program: program('dbg_syntax_error.py'), entry: 'broken()' });
  assert.match(important, /dbg_syntax_error\.py, line 2/);
  assert.match(important, /Fix the syntax error/);
});

test('an entry that raises before any traced line reports the exception and ends', async () => {
  const { important } = await launchExpectingEnd({ program: program('dbg_calls.py'), entry: 'no_such_function()' });
  assert.match(important, /Nothing was recorded: no_such_function\(\) raised NameError/);
});

test('an entry that raises is replayed to its end, then the exception is reported and the session ends', async () => {
  const a = (current = await startAdapter());
  const terminated = a.dc.waitForEvent('terminated');
  const exited = a.dc.waitForEvent('exited');
  // No exception filters: the replay runs straight to the end of the recording.
  await startSession(a, { program: program('dbg_raise.py'), entry: 'run()', stopOnEntry: false }, { exceptionFilters: [] });
  assert.equal((await exited).body.exitCode, 1);
  await terminated;
  const important = a.events
    .filter((e) => e.event === 'output' && e.body.category === 'important')
    .map((e) => e.body.output)
    .join('');
  assert.match(important, /run\(\) raised ValueError: bad item: x/);
});

test('a run that hits the steps limit says so, replays what was recorded, and ends cleanly', async () => {
  const a = (current = await startAdapter());
  const terminated = a.dc.waitForEvent('terminated');
  const exited = a.dc.waitForEvent('exited');
  await startSession(a, { program: program('dbg_forever.py'), entry: 'spin()', stopOnEntry: false, limits: { steps: 200 } });
  const ev = await exited;
  assert.equal(ev.body.outcome.kind, 'limit');
  assert.equal(ev.body.outcome.limit, 'steps');
  await terminated;
  const important = a.events
    .filter((e) => e.event === 'output' && e.body.category === 'important')
    .map((e) => e.body.output)
    .join('');
  assert.match(important, /The run hit a limit \(steps\)/);
  assert.match(important, /spin\(\) stopped by the steps limit/);
});

test('a malformed launch configuration lists each attribute to fix', async () => {
  const { important } = await launchExpectingEnd({ program: 42, stopOnEntry: 'yes' });
  assert.match(important, /The launch configuration is not valid/);
  assert.match(important, /"program" Expected string, received number/);
  assert.match(important, /"stopOnEntry" Expected boolean/);
});

test('a configuration without a program asks for one', async () => {
  const { important } = await launchExpectingEnd({});
  assert.match(important, /"program" is required/);
});

test('arguments given together with an entry call are rejected', async () => {
  const { important } = await launchExpectingEnd({ program: program('dbg_calls.py'), entry: 'main()', args: ['x'] });
  assert.match(important, /"args" are for scripts/);
});

test('a traceFile that is not a trace is rejected without running anything', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-adapter-'));
  const file = path.join(dir, 'not-a-trace.json');
  fs.writeFileSync(file, JSON.stringify({ schema: 'something/else' }));
  try {
    const { important } = await launchExpectingEnd({ traceFile: file });
    assert.match(important, /is not an ExecVerify trace: schema/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
