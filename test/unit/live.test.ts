// Live verification in somebody else's debug session (src/engine/live): real
// debugpy (.venv) driven over DAP as VS Code would drive it, a model over HTTP
// (the test server, scripted right and wrong), the real Python judge.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DapClient } from '../../src/engine/dap/client';
import { RecordSchema } from '../../src/engine/dataset/record';
import { JudgeClient } from '../../src/engine/judge/client';
import { LiveFollower } from '../../src/engine/live/follow';
import { assignedNames } from '../../src/engine/live/questions';
import { readLiveStop, type LiveStop } from '../../src/engine/live/stop';
import { askLive, liveSample, LiveTransition, type LiveJudged } from '../../src/engine/live/transition';
import { ModelProvider } from '../../src/engine/model';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { pythonTracerDir } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import { startDebugpySession, type DebugpySession } from '../support/debugpy-session';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';

const REPO = path.resolve(__dirname, '../..');
const PYTHON = path.join(REPO, '.venv/bin/python');
const PROGRAM = path.join(REPO, 'test/fixtures/live/walk.py');
const template = BUILTIN_TEMPLATES.find((t) => t.name === 'next-step')!;
const tracerDir = pythonTracerDir();

let pool: TracerPool;
let judge: JudgeClient;
let server: OpenAIServer;
let provider: ModelProvider;
let session: DebugpySession;
let dap: DapClient;
let threadId = 1;

/** Resumes the session with `how` and reads the stop it comes to. */
async function step(how: 'next' | 'stepIn' | 'stepOut'): Promise<{ stop: LiveStop; reason: string }> {
  const stopped = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  const ended = dap.waitFor('terminated').then(() => {
    throw new Error(`the program ended on ${how} instead of stopping`);
  });
  ended.catch(() => undefined);
  await dap.request(how, { threadId });
  const e = await Promise.race([stopped, ended]);
  return { stop: await readLiveStop(dap, threadId, { tracerDir }), reason: e.body.reason };
}

const answer = (nextLine: number, vars: Record<string, [string, string]>) =>
  JSON.stringify({ next_line: nextLine, variables: Object.entries(vars).map(([name, [value, type]]) => ({ name, value, type })) });

before(async () => {
  pool = new TracerPool({ size: 1 });
  judge = new JudgeClient(pool);
  server = await startOpenAIServer();
  provider = new ModelProvider({ baseURL: server.url, model: 'm', retries: 0 });
  // A user's debug session: debugpy's adapter, the program launched under it, a breakpoint in walk().
  session = await startDebugpySession({ python: PYTHON, program: PROGRAM, breakpoints: [6], showReturnValue: true });
  ({ dap, threadId } = session);
});

after(async () => {
  await session.close();
  await server.close();
  await pool.close();
});

function statuses(judged: LiveJudged): Record<string, string> {
  const out: Record<string, string> = {};
  judged.ask.answered[0]!.prompt.questions.forEach((q, i) => {
    out[q.kind === 'state' ? q.var : q.kind] = judged.results[0]![0]![i]!.status;
  });
  return out;
}

test('the assigned names of a line are read without running it', () => {
  assert.deepEqual(assignedNames('total += helper(x)'), ['total']);
  assert.deepEqual(assignedNames('for i, (k, v) in enumerate(d.items()):'), ['i', 'k', 'v']);
  assert.deepEqual(assignedNames('a = b = f(c, key=1)'), ['a', 'b']);
  assert.deepEqual(assignedNames('if x == 1 and (y := g()) >= 2:'), ['y']);
  assert.deepEqual(assignedNames('xs[i] = 0'), []);
  assert.deepEqual(assignedNames('self.count = n = 0  # reset'), ['n']);
  assert.deepEqual(assignedNames("with open('p') as fh:"), ['fh']);
});

test('at a breakpoint of a debugpy session: asked from the stop, judged from the next one (right)', async () => {
  const stop = await readLiveStop(dap, threadId, { tracerDir });
  assert.equal(stop.line, 6);
  assert.equal(stop.fn, 'walk');
  assert.equal(stop.first, 5);
  assert.ok(stop.exact);
  assert.deepEqual(stop.locals, { xs: { repr: '[1, 2]', type: 'list', literal: true, len: 2, items: stop.locals.xs!.items } });
  server.setScript(() => ({ text: answer(7, { total: ['0', 'int'], xs: ['[1, 2]', 'list'] }) }));
  const asked = await askLive(stop, template, { provider });
  const qs = asked.prepared.questions.map((q) => (q.kind === 'state' ? `state:${q.var}` : q.kind));
  assert.deepEqual(qs, ['next_line', 'state:total', 'state:xs'], 'the next line, what line 6 assigns, the other visible local');
  assert.match(JSON.stringify(server.requests.at(-1)?.body?.messages), /total = 0/, 'the prompt shows the stop');
  const watch = new LiveTransition(asked);
  watch.resumed('next');
  const next = await step('next');
  const judged = await watch.stopped(next.stop, next.reason, judge);
  assert.notEqual(judged, 'wait');
  if (judged === 'wait') return;
  assert.equal(judged.next, 7);
  assert.deepEqual(statuses(judged), { next_line: 'right', total: 'right', xs: 'right' });

  const sample = liveSample(judged, { project: 'fixtures', file: 'walk.py' });
  assert.equal(sample.provenance.truth, 'live-transition');
  assert.equal(sample.trace.steps, 3, 'one transition: the call, the asked line, its next event');
  assert.equal(RecordSchema.shape.provenance.parse(sample.provenance).truth, 'live-transition', 'the record schema keeps it');
  const truth = JSON.parse(sample.groundTruth) as { questions: { kind: string; truth: unknown }[] };
  assert.deepEqual(truth.questions.find((q) => q.kind === 'next_line')?.truth, judged.questions[0]!.truth);
});

test('a wrong prediction is wrong; a value read inexactly (a 3,000-character string) is unknown, never ✓/✗', async () => {
  const { stop } = { stop: await readLiveStop(dap, threadId, { tracerDir }) };
  assert.equal(stop.line, 7);
  server.setScript(() => ({ text: answer(9, { s: ["'a'", 'str'], total: ['1', 'int'], xs: ['[1, 2]', 'list'] }) }));
  const asked = await askLive(stop, template, { provider });
  const watch = new LiveTransition(asked);
  watch.resumed('next');
  const next = await step('next');
  const judged = await watch.stopped(next.stop, next.reason, judge);
  assert.notEqual(judged, 'wait');
  if (judged === 'wait') return;
  assert.equal(next.stop.locals.s?.truncated, true, 'longer than the repr bound');
  assert.deepEqual(statuses(judged), { next_line: 'wrong', s: 'unknown', total: 'wrong', xs: 'right' });
  assert.throws(() => liveSample(judged, { project: 'fixtures', file: 'walk.py' }), /unknown/);
});

test('stepping into a call waits for the frame to come back; the next line is the one after the call (followed as a tracker sees the session)', async () => {
  await step('next'); // 8 → 9
  const stop = await readLiveStop(dap, threadId, { tracerDir });
  assert.equal(stop.line, 9);
  server.setScript(() => ({ text: answer(8, { total: ['2', 'int'], x: ['1', 'int'] }) }));
  const watch = new LiveTransition(await askLive(stop, template, { provider }));
  // The editor's tracker forwards what it sees; the follower calls the live step.
  const seen: (number | 'judged')[] = [];
  let judged: LiveJudged | undefined;
  let pending = Promise.resolve();
  const follower = new LiveFollower({
    resumed: (how) => watch.resumed(how),
    stopped: (tid, reason) => {
      pending = (async () => {
        const at = await readLiveStop(dap, tid, { tracerDir });
        const r = await watch.stopped(at, reason, judge);
        seen.push(r === 'wait' ? at.line : 'judged');
        if (r !== 'wait') judged = r;
      })();
    },
    ended: () => undefined,
  });
  const forward = (e: unknown) => follower.didSend(e);
  dap.on('stopped', forward);
  try {
    for (const how of ['stepIn', 'next', 'next', 'next', 'next'] as const) {
      const stopped = dap.waitFor('stopped');
      follower.willReceive({ seq: 0, type: 'request', command: how, arguments: { threadId } });
      assert.equal(follower.current(), undefined, 'running: nothing to predict from');
      await dap.request(how, { threadId });
      await stopped;
      await pending;
      assert.deepEqual(follower.current(), { threadId });
      if (judged) break;
    }
  } finally {
    dap.off('stopped', forward);
  }
  assert.ok(judged, `stops: ${seen.join(', ')}`);
  assert.equal(seen[0], 2, 'into helper');
  assert.equal(judged.next, 8);
  const r = statuses(judged);
  assert.equal(r.next_line, 'right');
  assert.equal(r.total, 'right');
});

test("the follower takes any adapter's messages as data", () => {
  const calls: string[] = [];
  const f = new LiveFollower({
    resumed: (h) => calls.push(`resumed ${h}`),
    stopped: (t, r) => calls.push(`stopped ${t} ${r}`),
    ended: () => calls.push('ended'),
  });
  f.didSend({ type: 'event', event: 'stopped', body: { reason: 'breakpoint', threadId: 7 } });
  f.willReceive({ type: 'request', command: 'evaluate', arguments: { expression: 'x' } });
  f.willReceive({ type: 'request', command: 'toString' });
  assert.deepEqual(f.current(), { threadId: 7 }, 'an evaluate does not resume');
  f.willReceive({ type: 'request', command: 'goto', arguments: { threadId: 7, targetId: 1 } });
  f.didSend({ type: 'event', event: 'stopped', body: { reason: 'goto' } });
  f.didSend({ type: 'event', event: 'stopped', body: 'not a body' });
  f.didSend(null);
  f.didSend({ type: 'event', event: 'terminated' });
  assert.equal(f.current(), undefined);
  assert.deepEqual(calls, ['stopped 7 breakpoint', 'resumed other', 'stopped 7 goto', 'ended']);
});

test('an adapter that cannot evaluate (any debug type): its shown values are marked inexact, so only the next line is judged', async () => {
  const shownOnly = {
    request: <T>(command: string, args?: unknown): Promise<T> =>
      command === 'evaluate' ? Promise.reject(new Error('no evaluate')) : dap.request<T>(command, args),
  };
  const stop = await readLiveStop(shownOnly, threadId, { tracerDir });
  assert.equal(stop.exact, false);
  assert.equal(stop.fn, 'walk');
  assert.equal(stop.first, 5, 'the def above the line, from the source');
  assert.ok(Object.values(stop.locals).length > 0 && Object.values(stop.locals).every((v) => v.truncated === true));
  server.setScript(() => ({ text: answer(stop.line === 8 ? 9 : 8, { total: ['2', 'int'] }) }));
  const asked = await askLive(stop, template, { provider });
  const watch = new LiveTransition(asked);
  watch.resumed('next');
  const next = await step('next');
  const judged = await watch.stopped(await readLiveStop(shownOnly, threadId, { tracerDir }), next.reason, judge);
  assert.notEqual(judged, 'wait');
  if (judged === 'wait') return;
  const r = judged.results[0]![0]!;
  assert.equal(r[0]!.status, 'right', `next line ${judged.next}`);
  assert.ok(r.slice(1).every((x) => x.status === 'unknown'));
});

test('resumed with continue: every answer is unknown (more than the next step may have run)', async () => {
  const stop = await readLiveStop(dap, threadId, { tracerDir });
  server.setScript(() => ({ text: answer(stop.line + 1, {}) }));
  const asked = await askLive(stop, template, { provider });
  const watch = new LiveTransition(asked);
  watch.resumed('continue');
  const next = await step('next');
  const judged = await watch.stopped(next.stop, next.reason, judge);
  assert.notEqual(judged, 'wait');
  if (judged === 'wait') return;
  assert.ok(judged.results[0]![0]!.every((r) => r.status === 'unknown' && /continue/.test(r.why)));
});

test('stepping in at the return: the next line is -1, the values are the returning frame’s, read at debugpy’s return stop in the caller', async () => {
  let stop = await readLiveStop(dap, threadId, { tracerDir });
  assert.equal(stop.line, 8);
  stop = (await step('next')).stop;
  assert.equal(stop.line, 10);
  server.setScript(() => ({ text: answer(-1, { total: ['6', 'int'], xs: ['[1, 2]', 'list'] }) }));
  const watch = new LiveTransition(await askLive(stop, template, { provider }));
  watch.resumed('stepIn');
  const next = await step('stepIn');
  assert.equal(next.stop.fn, 'main');
  assert.ok(next.stop.callee, 'debugpy stops in the caller with the callee still below');
  const judged = await watch.stopped(next.stop, next.reason, judge);
  assert.notEqual(judged, 'wait');
  if (judged === 'wait') return;
  assert.equal(judged.next, -1);
  const r = statuses(judged);
  assert.equal(r.next_line, 'right');
  assert.equal(r.total, 'right');
  assert.equal(r.xs, 'right');
});
