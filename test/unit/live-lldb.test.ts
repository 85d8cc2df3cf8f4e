// Live verification in a C program's debug session (src/engine/live with
// adapter 'lldb'): gcc -g -O0, the real lldb DAP server (apt's lldb-vscode-14
// on Debian 12) driven over DAP as VS Code would drive it, stopped at a
// function breakpoint and at a source breakpoint; a model over HTTP (the test
// server, scripted right and wrong), the real Python judge with its C rules.
// No lldb: the test fails with what to install (CI installs it), never skips.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DapClient } from '../../src/engine/dap/client';
import { findLldbDap } from '../../src/engine/dap/lldb-tracer';
import { declaredBefore } from '../../src/engine/dap/lldb-values';
import { RecordSchema } from '../../src/engine/dataset/record';
import { JudgeClient } from '../../src/engine/judge/client';
import { cAssignedNames } from '../../src/engine/live/questions';
import { liveAdapter, readLiveStop, type LiveStop } from '../../src/engine/live/stop';
import { askLive, liveSample, LiveTransition, type LiveJudged, type Resume } from '../../src/engine/live/transition';
import { ModelProvider } from '../../src/engine/model';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { pythonTracerDir } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { leftBehind } from '../support/processes';

const REPO = path.resolve(__dirname, '../..');
const SOURCE = path.join(REPO, 'test/fixtures/live/walk.c');
const template = BUILTIN_TEMPLATES.find((t) => t.name === 'next-step')!;
const options = { tracerDir: pythonTracerDir(), adapter: 'lldb' as const };
// The program is built in this run's own directory: the process checks below see only this run's.
const TMP = mkdtempSync(path.join(tmpdir(), 'live-lldb-test-'));
const PROGRAM = path.join(TMP, 'walk');
const ADAPTER = findLldbDap(process.env);

let pool: TracerPool;
let judge: JudgeClient;
let server: OpenAIServer;
let provider: ModelProvider;
let adapter: ChildProcess;
let dap: DapClient;
let debuggee: number | undefined;
/** Rejects when the program exits: no step of these tests may run it to its end. */
let exited: Promise<never>;
let threadId = 1;

/** Resumes the session with `how` and reads the stop it comes to. */
async function resume(how: Resume & ('next' | 'stepIn' | 'continue')): Promise<{ stop: LiveStop; reason: string }> {
  const stopped = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await dap.request(how, { threadId });
  const e = await Promise.race([stopped, exited]);
  return { stop: await readLiveStop(dap, threadId, options), reason: e.body.reason };
}

/** The model's answer: the next line, and every asked variable's value from `values` (name → [value, type]). */
function scriptAnswer(nextLine: number, values: Record<string, [string, string]>): void {
  server.setScript(() => ({
    text: JSON.stringify({ next_line: nextLine, variables: Object.entries(values).map(([name, [value, type]]) => ({ name, value, type })) }),
  }));
}

/** Asks at `stop`, resumes with `how` until the transition is judged; the stops in between are returned too. */
async function askAndStep(stop: LiveStop, how: 'next' | 'stepIn', then: 'next' = 'next'): Promise<{ judged: LiveJudged; waited: number[]; at: LiveStop }> {
  const watch = new LiveTransition(await askLive(stop, template, { provider }));
  const waited: number[] = [];
  for (let move: 'next' | 'stepIn' = how; ; move = then) {
    watch.resumed(move);
    const next = await resume(move);
    const r = await watch.stopped(next.stop, next.reason, judge);
    if (r !== 'wait') return { judged: r, waited, at: next.stop };
    waited.push(next.stop.line);
  }
}

function statuses(judged: LiveJudged): Record<string, string> {
  const out: Record<string, string> = {};
  judged.ask.answered[0]!.prompt.questions.forEach((q, i) => {
    out[q.kind === 'state' ? q.var : q.kind] = judged.results[0]![0]![i]!.status;
  });
  return out;
}

const asked = (judged: LiveJudged) => judged.ask.prepared.questions.map((q) => (q.kind === 'state' ? q.var : q.kind));

before(async () => {
  const cc = spawnSync('gcc', ['-g', '-O0', '-o', PROGRAM, SOURCE], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  pool = new TracerPool({ size: 1 });
  judge = new JudgeClient(pool);
  server = await startOpenAIServer();
  provider = new ModelProvider({ baseURL: server.url, model: 'm', retries: 0 });
  // A user's C debug session: lldb's adapter, the program launched under it, a breakpoint on walk and one on line 19.
  adapter = spawn(ADAPTER, [], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  dap = new DapClient(adapter.stdout!, adapter.stdin!);
  dap.on('process', (e: DebugProtocol.ProcessEvent) => (debuggee = e.body.systemProcessId));
  exited = dap.waitFor('exited').then(() => {
    throw new Error('the program ended instead of stopping');
  });
  exited.catch(() => undefined);
  await dap.request('initialize', { clientID: 'test', adapterID: 'lldb-vscode', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const initialized = dap.waitFor('initialized');
  const launched = dap.request('launch', { program: PROGRAM, cwd: TMP });
  launched.catch(() => undefined);
  await Promise.race([initialized, launched]);
  await dap.request('setFunctionBreakpoints', { breakpoints: [{ name: 'walk' }] });
  await dap.request('setBreakpoints', { source: { path: SOURCE }, breakpoints: [{ line: 19 }] });
  const first = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await dap.request('configurationDone', {});
  await launched;
  threadId = (await first).body.threadId ?? 1;
});

after(async () => {
  await Promise.race([dap.request('disconnect', { terminateDebuggee: true }).catch(() => undefined), new Promise((r) => setTimeout(r, 5000))]);
  for (const pid of [debuggee, -adapter.pid!]) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // SIGKILL cannot be ignored: each ends once scheduled; then nothing may be left.
  while (leftBehind(PROGRAM).length > 0) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(leftBehind(PROGRAM), []);
  await server.close();
  await pool.close();
  rmSync(TMP, { recursive: true, force: true });
});

test('the debug types read through lldb, and the C lines’ assigned names, read without running them', () => {
  assert.equal(liveAdapter('lldb-dap'), 'lldb');
  assert.equal(liveAdapter('lldb-vscode'), 'lldb');
  assert.equal(liveAdapter('debugpy'), 'debugpy');
  assert.equal(liveAdapter('lldb'), 'other', "CodeLLDB's values are not known to read exactly");
  assert.equal(liveAdapter('cppdbg'), 'other');
  assert.deepEqual(cAssignedNames('total += twice(xs[i]);'), ['total']);
  assert.deepEqual(cAssignedNames('for (int i = 0; i < n; i++) {'), ['i']);
  assert.deepEqual(cAssignedNames('int a = 1, *q = &a, b[2] = {0, 0};'), ['a', 'b'], 'the pointer q is never asked');
  assert.deepEqual(cAssignedNames('seen[i] = xs[i]; range.hi = total;'), ['seen', 'range'], 'an element or a field changes the local');
  assert.deepEqual(cAssignedNames('*p = 3; p->x = 1; ++*p;'), [], 'writes through a pointer change no local');
  assert.deepEqual(cAssignedNames('x <<= 2; --y; z--; if (a == b && c <= d) e = 1; // f = 2'), ['x', 'e', 'y', 'z']);
  assert.deepEqual(cAssignedNames('while ((c = getchar()) != EOF) {'), ['c']);
  assert.deepEqual(cAssignedNames('printf("%d = %d\\n", a, b); char k = \'=\';'), ['k']);
  assert.deepEqual(cAssignedNames('int x;'), [], 'declared, not assigned: its bytes are garbage');
  // A local on its declaration's line: live only once the stop is past the declaration's column.
  assert.equal(declaredBefore({ line: 18, column: 12 }, 18, 12), false, 'the for line, first stop: at `int i`');
  assert.equal(declaredBefore({ line: 18, column: 12 }, 18, 27), true, 'the for line again: at `i++`');
  assert.equal(declaredBefore({ line: 18, column: 12 }, 18, 0), false, 'no column: not on its own line');
  assert.equal(declaredBefore(undefined, 30, 1), false, 'a declaration lldb does not say: never live');
});

test('at a function breakpoint: the stop read typed, a local only past its declaration, a pointer an address never asked (right answers)', async () => {
  const stop = await readLiveStop(dap, threadId, options);
  assert.equal(stop.line, 14);
  assert.equal(stop.fn, 'walk');
  assert.equal(stop.first, 13, 'the line that names walk(');
  assert.ok(stop.exact);
  assert.deepEqual(stop.locals, {
    xs: { repr: 'address', type: 'const int *', literal: false },
    n: { repr: '2', type: 'int', literal: true },
  });
  scriptAnswer(15, { total: ['0', 'int'], n: ['2', 'int'] });
  const { judged } = await askAndStep(stop, 'next');
  assert.deepEqual(asked(judged), ['next_line', 'total', 'n'], 'what line 14 declares, the other visible local; never xs');
  assert.equal(judged.trace.language, 'c');
  const prompt = JSON.stringify(server.requests.at(-1)?.body?.messages);
  assert.match(prompt, /int total = 0;/, 'the prompt shows the stop');
  assert.match(prompt, /You are watching a C program run in a debugger/);
  assert.match(prompt, /```c\\n 1  #include <stdio.h>/, 'the code is fenced as C');
  assert.equal(judged.next, 15);
  assert.deepEqual(statuses(judged), { next_line: 'right', total: 'right', n: 'right' });

  const sample = liveSample(judged, { project: 'fixtures', file: 'walk.c' });
  assert.equal(sample.provenance.truth, 'live-transition');
  assert.equal(sample.provenance.function, 'walk');
  assert.equal(sample.trace.steps, 3, 'one transition: the call, the asked line, its next event');
  assert.equal(RecordSchema.shape.provenance.parse(sample.provenance).truth, 'live-transition');
  const truth = JSON.parse(sample.groundTruth) as { questions: { kind: string; var?: string; truth: unknown }[] };
  assert.deepEqual(truth.questions.find((q) => q.var === 'total')?.truth, { repr: '0', type: 'int', literal: true });
});

test('at a source breakpoint: wrong predictions are wrong, right ones right, by the C rules', async () => {
  const { stop, reason } = await resume('continue');
  assert.equal(reason, 'breakpoint');
  assert.equal(stop.line, 19);
  assert.deepEqual(stop.locals.tag, { repr: "'a'", type: 'char', literal: true });
  assert.equal(stop.locals.seen?.repr, '[0, 0]');
  assert.equal(stop.locals.range?.repr, '{.lo = 0, .hi = 0}');
  assert.deepEqual(stop.locals.i, { repr: '0', type: 'int', literal: true });
  const others: Record<string, [string, string]> = { n: ['2', 'int'], tag: ["'a'", 'char'], seen: ['[0, 0]', 'int[2]'], range: ['{.lo = 0, .hi = 0}', 'pair'] };
  scriptAnswer(21, { total: ['1', 'int'], i: ['0', 'int'], ...others });
  const { judged } = await askAndStep(stop, 'next');
  assert.deepEqual(asked(judged).slice(0, 3), ['next_line', 'total', 'i'], 'the assigned total, then i which the line names');
  assert.equal(asked(judged).length, 5, 'and two other locals');
  assert.ok(!asked(judged).includes('xs'));
  assert.equal(judged.next, 20);
  const r = statuses(judged);
  assert.equal(r.next_line, 'wrong');
  assert.equal(r.total, 'wrong', 'total is 2 after line 19');
  assert.equal(r.i, 'right');
  for (const name of asked(judged).slice(3)) assert.equal(r[name], 'right', `${name} did not change`);
});

test("an array element, a char answered bare, and a for line's second stop, where i is live", async () => {
  let stop = await readLiveStop(dap, threadId, options);
  assert.equal(stop.line, 20);
  scriptAnswer(21, {
    seen: ['[1,0]', 'int[2]'],
    i: ['0', 'int'],
    total: ['2', 'int'],
    n: ['2', 'int'],
    tag: ["'a'", 'char'],
    range: ['{.lo = 0, .hi = 0}', 'pair'],
  });
  let r = await askAndStep(stop, 'next');
  assert.equal(asked(r.judged)[1], 'seen');
  assert.ok(
    Object.values(statuses(r.judged)).every((s) => s === 'right'),
    JSON.stringify(statuses(r.judged)),
  );

  stop = r.at;
  assert.equal(stop.line, 21);
  scriptAnswer(18, {
    tag: ['b', 'char'],
    total: ['2', 'int'],
    i: ['0', 'int'],
    n: ['2', 'int'],
    seen: ['[1, 0]', 'int[2]'],
    range: ['{.lo = 0, .hi = 0}', 'pair'],
  });
  r = await askAndStep(stop, 'next');
  assert.equal(asked(r.judged)[1], 'tag');
  assert.deepEqual(r.judged.questions[1]?.truth, { repr: "'b'", type: 'char', literal: true });
  assert.ok(
    Object.values(statuses(r.judged)).every((s) => s === 'right'),
    JSON.stringify(statuses(r.judged)),
  );

  // Back on the for line, at `i++`: past i's declaration, so i is shown and asked.
  stop = r.at;
  assert.equal(stop.line, 18);
  assert.deepEqual(stop.locals.i, { repr: '0', type: 'int', literal: true });
  scriptAnswer(19, {
    i: ['1', 'int'],
    total: ['2', 'int'],
    n: ['2', 'int'],
    tag: ["'b'", 'char'],
    seen: ['[1, 0]', 'int[2]'],
    range: ['{.lo = 0, .hi = 0}', 'pair'],
  });
  r = await askAndStep(stop, 'next');
  assert.deepEqual(asked(r.judged).slice(0, 3), ['next_line', 'i', 'n']);
  assert.equal(r.judged.next, 19);
  assert.ok(
    Object.values(statuses(r.judged)).every((s) => s === 'right'),
    JSON.stringify(statuses(r.judged)),
  );
});

test('stepping into a call waits in the callee and at the line it returns to; the next line is the one after the call', async () => {
  const stop = await readLiveStop(dap, threadId, options);
  assert.equal(stop.line, 19);
  scriptAnswer(20, {
    total: ['6', 'int'],
    i: ['1', 'int'],
    n: ['2', 'int'],
    tag: ["'b'", 'char'],
    seen: ['[1, 0]', 'int[2]'],
    range: ['{.lo = 0, .hi = 0}', 'pair'],
  });
  const { judged, waited } = await askAndStep(stop, 'stepIn');
  // twice's lines 9, 10, 11, then walk's line 19 again, mid-line, as twice returns into it.
  assert.deepEqual(waited, [9, 10, 11, 19]);
  assert.equal(judged.next, 20);
  assert.deepEqual(statuses(judged).next_line, 'right');
  assert.deepEqual(statuses(judged).total, 'right');
  assert.ok(
    Object.values(statuses(judged)).every((s) => s === 'right'),
    JSON.stringify(statuses(judged)),
  );
});
