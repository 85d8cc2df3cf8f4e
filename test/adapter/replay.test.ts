// Specification of the replay debugger over real recordings of real programs,
// driven through DAP with DebugClient.
import { after, afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { installedPythons } from '../support/pythons';
import { closePool, launch, locals, move, program, startAdapter, startSession, where, type Adapter } from './harness';

let current: Adapter | undefined;
async function adapter(): Promise<Adapter> {
  current = await startAdapter();
  return current;
}
afterEach(async () => {
  await current?.close();
  current = undefined;
});
after(closePool);

const CALLS = program('dbg_calls.py');

test('stops on the first line of the entry call when stopOnEntry is set', async () => {
  const a = await adapter();
  const stop = await launch(a, { program: CALLS, entry: 'main()', stopOnEntry: true });
  assert.equal(stop.body.reason, 'entry');
  const here = await where(a);
  assert.deepEqual([here.fn, here.line, here.depth], ['main', 15, 1]);
  const step = a.events.find((e) => e.event === 'execverify/step');
  assert.ok(step, 'an execverify/step event follows the stop');
  assert.equal(step.body.line, 15);
  assert.equal(step.body.file, CALLS);
  assert.equal(typeof step.body.stepIndex, 'number');
});

test('reports recording progress and the program output before replaying', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  const names = a.events.map((e) => e.event);
  assert.ok(names.indexOf('progressStart') < names.indexOf('progressEnd'));
  assert.ok(names.indexOf('progressEnd') < names.indexOf('initialized'));
  const stdout = a.events
    .filter((e) => e.event === 'output' && e.body.category === 'stdout')
    .map((e) => e.body.output)
    .join('');
  assert.equal(stdout, 'result 14\n');
});

test('steps forward into a call and back out across its return', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  await move(a, 'next');
  assert.equal((await where(a)).line, 16);
  await move(a, 'stepIn');
  assert.deepEqual(await pick(a), ['sum_squares', 8, 2]);
  await move(a, 'next');
  await move(a, 'next');
  assert.deepEqual(await pick(a), ['sum_squares', 10, 2]);
  await move(a, 'stepIn');
  assert.deepEqual(await pick(a), ['square', 3, 3]);
  assert.equal((await locals(a)).x?.value, '1');
  // Stepping back from a callee's first line lands on the call site.
  await move(a, 'stepBack');
  assert.deepEqual(await pick(a), ['sum_squares', 10, 2]);
  await move(a, 'stepIn');
  await move(a, 'next');
  assert.deepEqual(await pick(a), ['square', 4, 3]);
  assert.equal((await locals(a)).y?.value, '1');
  // Stepping over the return lands back in the caller, which has the new total.
  await move(a, 'next');
  assert.deepEqual(await pick(a), ['sum_squares', 9, 2]);
  assert.equal((await locals(a)).total?.value, '1');
  // Stepping back over the call skips the callee and restores the old state.
  await move(a, 'stepBack');
  assert.deepEqual(await pick(a), ['sum_squares', 10, 2]);
  assert.equal((await locals(a)).total?.value, '0');
});

test('next steps over calls; stepOut returns to the caller', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  await move(a, 'next');
  await move(a, 'next');
  assert.deepEqual(await pick(a), ['main', 17, 1]);
  assert.equal((await locals(a)).result?.value, '14');
  await move(a, 'stepBack');
  await move(a, 'stepIn');
  await move(a, 'stepIn');
  await move(a, 'stepOut');
  assert.deepEqual(await pick(a), ['main', 17, 1]);
});

test('reverse-continue runs backward to the previous breakpoint hit', async () => {
  const a = await adapter();
  const stop = await launch(a, { program: CALLS, entry: 'main()', stopOnEntry: false }, { breakpoints: [{ line: 17 }] });
  assert.equal(stop.body.reason, 'breakpoint');
  assert.deepEqual(await pick(a), ['main', 17, 1]);
  await a.dc.setBreakpointsRequest({ source: { path: CALLS }, breakpoints: [{ line: 17 }, { line: 3 }] });
  const back = await move(a, 'reverseContinue');
  assert.equal(back.body.reason, 'breakpoint');
  assert.deepEqual(await pick(a), ['square', 3, 3]);
  assert.equal((await locals(a)).x?.value, '3');
  await move(a, 'reverseContinue');
  assert.equal((await locals(a)).x?.value, '2');
  await move(a, 'continue');
  assert.equal((await locals(a)).x?.value, '3');
  await move(a, 'continue');
  assert.deepEqual(await pick(a), ['main', 17, 1]);
});

test('reverse-continue with no breakpoint behind stops at the start of the recording', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  await move(a, 'next');
  await move(a, 'next');
  const stop = await move(a, 'reverseContinue');
  assert.equal(stop.body.reason, 'entry');
  assert.deepEqual(await pick(a), ['main', 15, 1]);
});

test('steps out of the innermost call of a deep recursion one level at a time', async () => {
  const a = await adapter();
  const file = program('dbg_recursion.py');
  await launch(a, { program: file, entry: 'depth(30)', stopOnEntry: false }, { breakpoints: [{ line: 4 }] });
  const deepest = await where(a);
  assert.deepEqual([deepest.fn, deepest.line, deepest.depth], ['depth', 4, 31]);
  assert.equal((await locals(a)).n?.value, '0');
  await move(a, 'stepOut');
  const up = await where(a);
  assert.deepEqual([up.line, up.depth], [6, 30]);
  assert.equal((await locals(a)).n?.value, '1');
  assert.equal((await locals(a)).below?.value, '0');
  await move(a, 'stepOut');
  assert.equal((await where(a)).depth, 29);
  assert.equal((await locals(a)).below?.value, '1');
  // Every caller frame shows the line it is waiting on.
  const frames = (await where(a)).frames;
  assert.ok(frames.slice(1).every((f) => f.line === 5 && f.name === 'depth'));
});

test('a conditional breakpoint stops only where its condition held on recorded values', async () => {
  const a = await adapter();
  const file = program('dbg_loop.py');
  await launch(a, { program: file, entry: 'accumulate(10)', stopOnEntry: false }, { breakpoints: [{ line: 5, condition: 'i == 7 and total > 20' }] });
  const vars = await locals(a);
  assert.equal(vars.i?.value, '7');
  assert.equal(vars.total?.value, '21');
  const end = a.dc.waitForEvent('terminated');
  await a.dc.continueRequest({ threadId: 1 });
  await end;
});

test('a hit count stops on the n-th run; with a condition it counts runs where the condition held', async () => {
  const a = await adapter();
  const file = program('dbg_loop.py');
  await launch(a, { program: file, entry: 'accumulate(10)', stopOnEntry: false }, { breakpoints: [{ line: 5, hitCondition: '3' }] });
  assert.equal((await locals(a)).i?.value, '2');
  await a.dc.setBreakpointsRequest({ source: { path: file }, breakpoints: [{ line: 5, condition: 'i % 2 == 1', hitCondition: '>=2' }] });
  await move(a, 'continue');
  assert.equal((await locals(a)).i?.value, '3');
  await move(a, 'continue');
  assert.equal((await locals(a)).i?.value, '5');
  await move(a, 'reverseContinue');
  assert.equal((await locals(a)).i?.value, '3');
});

test('breakpoints on lines that never ran are unverified and say why', async () => {
  const a = await adapter();
  await launch(a, { program: program('dbg_raise.py'), entry: 'run()' });
  const res = await a.dc.setBreakpointsRequest({
    source: { path: program('dbg_raise.py') },
    breakpoints: [{ line: 16 }, { line: 11 }, { line: 11, hitCondition: 'often' }],
  });
  const [never, ran, bad] = res.body.breakpoints;
  assert.equal(never?.verified, false);
  assert.match(never?.message ?? '', /never ran/);
  assert.equal(ran?.verified, true);
  assert.equal(bad?.verified, false);
  assert.match(bad?.message ?? '', /hit count/);
});

test('goto targets list every run of a loop line; goto the 3rd run restores that state', async () => {
  const a = await adapter();
  const file = program('dbg_loop.py');
  await launch(a, { program: file, entry: 'accumulate(5)' });
  const targets = await a.dc.gotoTargetsRequest({ source: { path: file }, line: 5 });
  assert.equal(targets.body.targets.length, 5);
  assert.match(targets.body.targets[2]!.label, /^run 3 of 5/);
  const stopped = a.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await a.dc.gotoRequest({ threadId: 1, targetId: targets.body.targets[2]!.id });
  assert.equal((await stopped).body.reason, 'goto');
  const vars = await locals(a);
  assert.equal(vars.i?.value, '2');
  assert.equal(vars.total?.value, '1');
  const step = a.events.filter((e) => e.event === 'execverify/step').at(-1)!;
  assert.deepEqual([step.body.run, step.body.runs], [3, 5]);
});

test('restartFrame goes back to the first line of the chosen frame', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()', stopOnEntry: false }, { breakpoints: [{ line: 4 }] });
  const { frames } = await where(a);
  const stopped = a.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await a.dc.restartFrameRequest({ frameId: frames[1]!.id });
  assert.equal((await stopped).body.reason, 'restart');
  assert.deepEqual(await pick(a), ['sum_squares', 8, 2]);
});

test('stops where the uncaught exception was raised, with exceptionInfo', async () => {
  const a = await adapter();
  const stop = await launch(a, { program: program('dbg_raise.py'), entry: 'run()', stopOnEntry: false });
  assert.equal(stop.body.reason, 'exception');
  assert.deepEqual(await pick(a), ['check', 15, 2]);
  const info = await a.dc.exceptionInfoRequest({ threadId: 1 });
  assert.equal(info.body.exceptionId, 'ValueError');
  assert.equal(info.body.description, 'bad item: x');
  assert.equal(info.body.breakMode, 'unhandled');
  const exited = a.dc.waitForEvent('exited');
  const terminated = a.dc.waitForEvent('terminated');
  await a.dc.continueRequest({ threadId: 1 });
  assert.equal((await exited).body.exitCode, 1);
  await terminated;
  const said = a.events
    .filter((e) => e.event === 'output')
    .map((e) => e.body.output)
    .join('');
  assert.match(said, /run\(\) raised ValueError: bad item: x \(line 15/);
});

test('the raised-exceptions filter also stops on exceptions that were caught', async () => {
  const a = await adapter();
  await launch(a, { program: program('dbg_raise.py'), entry: 'run()', stopOnEntry: false }, { exceptionFilters: ['raised'] });
  assert.deepEqual(await pick(a), ['parse', 4, 3]);
  const info = await a.dc.exceptionInfoRequest({ threadId: 1 });
  assert.equal(info.body.breakMode, 'always');
  assert.match(info.body.description ?? '', /invalid literal/);
  await move(a, 'continue');
  assert.deepEqual(await pick(a), ['check', 15, 2]);
});

test('variables expand nested dicts, lists and tuples from recorded children', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  await move(a, 'next');
  const data = (await locals(a)).data!;
  assert.equal(data.type, 'dict');
  assert.equal(data.indexedVariables, 3);
  const level1 = await children(a, data.variablesReference);
  assert.deepEqual(Object.keys(level1), ["'name'", "'values'", "'nested'"]);
  assert.equal(level1["'name'"]!.value, "'demo'");
  const values = await children(a, level1["'values'"]!.variablesReference);
  assert.deepEqual(
    Object.values(values).map((v) => v.value),
    ['1', '2', '3'],
  );
  assert.equal(values['1']!.evaluateName, "data['values'][1]");
  const nested = await children(a, level1["'nested'"]!.variablesReference);
  assert.equal(nested["'inner'"]!.value, "[[1, 2], {'k': (3, 4)}]");
});

test('objects show attributes; large containers page and say they were truncated', async () => {
  const a = await adapter();
  const file = program('dbg_objects.py');
  await launch(a, { program: file, entry: 'build(500)', stopOnEntry: false }, { breakpoints: [{ line: 13 }] });
  const vars = await locals(a);
  const big = vars.big!;
  assert.equal(big.type, 'list');
  assert.match(big.value, /\(truncated\)$/);
  assert.ok(big.indexedVariables! > 0 && big.indexedVariables! < 500);
  const page = await a.dc.variablesRequest({ variablesReference: big.variablesReference, filter: 'indexed', start: 5, count: 3 });
  assert.deepEqual(
    page.body.variables.map((v) => [v.name, v.value]),
    [
      ['5', '5'],
      ['6', '6'],
      ['7', '7'],
    ],
  );
  const named = await a.dc.variablesRequest({ variablesReference: big.variablesReference, filter: 'named' });
  assert.match(named.body.variables[0]!.value, new RegExp(`of 500 elements were recorded`));
  const origin = await children(a, vars.origin!.variablesReference);
  assert.equal(origin.x!.value, '0');
  assert.equal(origin.y!.value, '[1, 2]');
  assert.equal(origin.y!.evaluateName, 'origin.y');
  const pair = await children(a, vars.pair!.variablesReference);
  assert.equal(pair['0']!.type, 'dbg_objects.Point');
});

test('evaluate and hover answer from recorded values and never run code', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  await move(a, 'next');
  const { frames } = await where(a);
  const frameId = frames[0]!.id;
  const ev = (expression: string, context = 'watch') => a.dc.evaluateRequest({ expression, frameId, context });
  assert.equal((await ev("data['values'][1] * 10 + len(data)")).body.result, '23');
  assert.equal((await ev("data['values'] == [1, 2, 3]", 'hover')).body.result, 'True');
  assert.equal((await ev("'demo' in data['name'] and not data['values'][-1] < 3")).body.result, 'True');
  const hover = await ev('data', 'hover');
  assert.ok(hover.body.variablesReference > 0);
  await assert.rejects(ev('print("side effect")'), /print\(\)' is not available/);
  await assert.rejects(ev('result'), /name 'result' is not recorded at this step/);
});

test('the custom jumpToStep request moves the cursor to any step and trace describes the run', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  const info = await a.dc.customRequest('execverify/trace');
  assert.equal(info.body.entry.expr, 'main()');
  assert.equal(info.body.outcome.kind, 'returned');
  assert.equal(info.body.trace, undefined);
  const full = await a.dc.customRequest('execverify/trace', { full: true });
  const steps = full.body.trace.steps as { i: number; event: string; fn: string; line: number }[];
  const target = steps.find((s) => s.event === 'line' && s.fn === 'square')!;
  const stopped = a.dc.waitForEvent('stopped');
  await a.dc.customRequest('execverify/jumpToStep', { stepIndex: target.i });
  await stopped;
  assert.deepEqual(await pick(a), ['square', target.line, 3]);
  const step = a.events.filter((e) => e.event === 'execverify/step').at(-1)!;
  assert.equal(step.body.stepIndex, target.i);
  await assert.rejects(a.dc.customRequest('execverify/jumpToStep', { stepIndex: 10_000 }), /stepIndex must be an integer/);
});

test('running past the end prints the outcome and ends with exited and terminated', async () => {
  const a = await adapter();
  await launch(a, { program: CALLS, entry: 'main()' });
  const exited = a.dc.waitForEvent('exited');
  const terminated = a.dc.waitForEvent('terminated');
  await a.dc.continueRequest({ threadId: 1 });
  const ev = await exited;
  assert.equal(ev.body.exitCode, 0);
  assert.deepEqual(ev.body.outcome.kind, 'returned');
  assert.equal(ev.body.outcome.value.repr, '14');
  await terminated;
  assert.ok(a.events.some((e) => e.event === 'output' && e.body.output === 'main() returned 14\n'));
});

test('a script shows its module globals as a scope and gets its arguments', async () => {
  const a = await adapter();
  const file = program('dbg_script.py');
  await launch(a, { program: file, args: ['ab', 'c'], stopOnEntry: false }, { breakpoints: [{ line: 11 }] });
  const st = await a.dc.stackTraceRequest({ threadId: 1 });
  assert.deepEqual(
    st.body.stackFrames.map((f) => f.name),
    ['greet', '<module>'],
  );
  const scopes = await a.dc.scopesRequest({ frameId: st.body.stackFrames[0]!.id });
  assert.deepEqual(
    scopes.body.scopes.map((s) => s.name),
    ['Locals', 'Globals'],
  );
  const globals = await children(a, scopes.body.scopes[1]!.variablesReference);
  assert.equal(globals.LIMIT!.value, '3');
  assert.equal(globals.names!.value, "['ab', 'c']");
  assert.equal((await locals(a)).name!.value, "'ab'");
});

async function pick(a: Adapter): Promise<[string, number, number]> {
  const w = await where(a);
  return [w.fn, w.line, w.depth];
}

async function children(a: Adapter, ref: number): Promise<Record<string, DebugProtocol.Variable>> {
  const res = await a.dc.variablesRequest({ variablesReference: ref });
  return Object.fromEntries(res.body.variables.map((v) => [v.name, v]));
}

test('the launch configuration chooses the interpreter and extra environment of the run', async () => {
  const python = installedPythons()[0]!;
  const version = execFileSync(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();
  const a = await adapter();
  const exited = a.dc.waitForEvent('exited');
  await startSession(a, { program: program('dbg_env.py'), entry: 'report()', python, env: { DBG_GREETING: 'hello' }, stopOnEntry: false });
  assert.equal((await exited).body.outcome.value.repr, `'hello ${version}'`);
});

test('a generator frame keeps its locals across resumptions; stepping over a yield returns to the consumer', async () => {
  const a = await adapter();
  await launch(a, { program: program('dbg_generator.py'), entry: 'consume()', stopOnEntry: false }, { breakpoints: [{ line: 4, hitCondition: '2' }] });
  const here = await where(a);
  assert.deepEqual(
    here.frames.map((f) => [f.name, f.line]),
    [
      ['numbers', 4],
      ['consume', 9],
    ],
  );
  assert.equal((await locals(a)).i?.value, '1');
  await move(a, 'next');
  assert.deepEqual(await pick(a), ['consume', 10, 1]);
  assert.equal((await locals(a)).sq?.value, '1');
  await move(a, 'next');
  await move(a, 'next');
  assert.deepEqual(await pick(a), ['consume', 10, 1]);
  assert.equal((await locals(a)).sq?.value, '4');
  await move(a, 'stepBack');
  await move(a, 'stepBack');
  assert.deepEqual(await pick(a), ['consume', 10, 1]);
  assert.equal((await locals(a)).sq?.value, '1');
});
