// "Record from here" through the real engine server over its LSP stream: the
// test is the editor — it runs a real debugpy session on Python 3.12 (and one
// on 3.11), forwards what the session does as the extension's tracker does
// (a LiveFollower over the requests it sends and the events it gets:
// execverify/liveStopped, liveResumed, liveEnded), and answers the server's
// execverify/dap requests with the session's DAP connection. debugpy is
// .venv's, copied beside the test for 3.12 (test/unit/live-record.test.ts).
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DapClient } from '../../src/engine/dap/client';
import { LiveFollower } from '../../src/engine/live/follow';
import { TraceSchema } from '../../src/engine/trace/schema';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import { TraceResultSchema } from '../../src/server/protocol';
import { closePool, launch, move, startAdapter, where } from '../adapter/harness';
import { pythonOf } from '../support/pythons';
import { startDebugpySession } from '../support/debugpy-session';
import { startServer, type ServerUnderTest } from './lsp-client';

const REPO = path.resolve(__dirname, '../..');
const VENV_PYTHON = path.join(REPO, '.venv/bin/python');
const PROGRAM = path.join(REPO, 'test/fixtures/live/record.py');
const BREAK_LINE = 8; // `acc += square(x)`: hit once per element of [1, 2, 3]

const python312 = () => pythonOf('3.12');

interface Session {
  id: string;
  close(): Promise<void>;
  dap: DapClient;
  threadId: number;
  /** Every DAP request the server sent into the session. */
  sent: string[];
  /** The program's stdout and stderr, as debugpy forwards them. */
  stdout: () => string;
  stderr: () => string;
  /** Runs before the editor forwards a request the server sent (a test holds or cancels there). */
  before?: (command: string) => Promise<void>;
}

let server: ServerUnderTest;
let work: string;
const sessions = new Map<string, Session>();

/**
 * A user's debug session, stopped at BREAK_LINE, followed as the editor's
 * tracker follows it: each request the editor sends and each event the
 * adapter sends go through a LiveFollower, whose calls become the server's
 * notifications.
 */
async function startSession(id: string, python: string, env: NodeJS.ProcessEnv): Promise<Session> {
  let out = '';
  let err = '';
  const follower = new LiveFollower({
    stopped: (threadId, reason) => void server.connection.sendNotification('execverify/liveStopped', { sessionId: id, threadId, reason, debugType: 'debugpy' }),
    resumed: (how) => void server.connection.sendNotification('execverify/liveResumed', { sessionId: id, how }),
    ended: () => void server.connection.sendNotification('execverify/liveEnded', { sessionId: id }),
  });
  const started = await startDebugpySession({
    python,
    program: PROGRAM,
    breakpoints: [BREAK_LINE],
    env,
    listen: (dap) => {
      dap.on('output', (e: DebugProtocol.OutputEvent) => {
        if (e.body.category === 'stdout') out += e.body.output;
        if (e.body.category === 'stderr') err += e.body.output;
      });
      for (const event of ['stopped', 'terminated', 'exited']) dap.on(event, (e: unknown) => follower.didSend(e));
    },
  });
  const { dap, threadId } = started;
  const session: Session = { id, close: started.close, dap, threadId, sent: [], stdout: () => out, stderr: () => err };
  sessions.set(id, session);
  // The tracker sees the requests the editor sends on the server's behalf (customRequest) like any other.
  session.sent.push = (...commands: string[]) => {
    for (const command of commands) follower.willReceive({ type: 'request', seq: 0, command, arguments: { threadId } });
    return Array.prototype.push.apply(session.sent, commands);
  };
  return session;
}

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'ev-live-record-'));
  const debugpy = path.join(REPO, '.venv/lib/python3.11/site-packages/debugpy');
  assert.ok(existsSync(debugpy), `debugpy is not in .venv (${debugpy}): run scripts/python-env.sh`);
  cpSync(debugpy, path.join(work, 'debugpy'), { recursive: true });
  server = await startServer({ rootPath: work, workDoneProgress: true });
  // The extension's side of execverify/dap: the session's own requests (customRequest in VS Code).
  server.connection.onRequest('execverify/dap', async (p: { sessionId: string; command: string; args?: unknown }) => {
    const s = sessions.get(p.sessionId);
    if (!s) throw new Error('the debug session has ended');
    await s.before?.(p.command);
    s.sent.push(p.command);
    return s.dap.request(p.command, p.args);
  });
});

after(async () => {
  for (const s of sessions.values()) await s.close();
  await server?.close();
  await closePool();
  rmSync(work, { recursive: true, force: true });
});

/** Generous, and only to end a hung run with a failure (a session that never stops again): nothing here measures time. */
const HUNG = { timeout: 300_000 };

const record = (sessionId: string) => server.connection.sendRequest('execverify/recordFromHere', { sessionId });

test('on 3.12: the rest of the stopped call is recorded beside debugpy, through breakpoints inside it, and adopted as a run', HUNG, async () => {
  const s = await startSession('py312', python312(), { ...process.env, PYTHONPATH: work });
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: s.id, threadId: s.threadId, reason: 'breakpoint', debugType: 'debugpy' });
  const ended = s.dap.waitFor('terminated');
  const result = TraceResultSchema.parse(await record(s.id));
  const trace = TraceSchema.parse(result.trace);
  assert.equal(trace.python?.backend, 'monitoring');
  assert.equal(trace.outcome.kind === 'returned' && trace.outcome.value.repr, "(14, 'sum=14')");
  assert.deepEqual([trace.steps[0]!.event, trace.steps[0]!.fn, trace.steps[0]!.line], ['call', 'total', BREAK_LINE], 'it starts at the stop');
  assert.equal(trace.steps.filter((st) => st.event === 'call' && st.fn === 'square').length, 3, 'every square call of the rest of the loop');
  // The breakpoint stops the call twice more before it returns: resumed each time, it records on.
  assert.deepEqual(
    s.sent.filter((c) => c === 'continue'),
    ['continue', 'continue', 'continue'],
  );
  await ended;
  assert.match(s.stdout(), /\(14, 'sum=14'\)/, 'the program ran on to its end as without the recorder');
  // The run is the server's: the replay's predictions can refer to it.
  const panel = (await server.connection.sendRequest('execverify/panel', { runId: result.runId })) as { run: { runId: string; steps: number } };
  assert.deepEqual([panel.run.runId, panel.run.steps], [result.runId, trace.steps.length], 'the panel shows the recorded run');
  const begin = server.notifications.find(
    (n) => n.method === '$/progress' && (n.params as { value: { kind: string; title?: string } }).value.title === 'ExecVerify: recording the rest of the call',
  );
  assert.ok(begin, 'a progress notification while recording');
  assert.equal((begin.params as { value: { cancellable?: boolean } }).value.cancellable, true, 'cancellable');

  // The editor replays it in the execverify debugger (a traceFile launch): from the stop's line, forward and back.
  const file = path.join(work, 'recorded.json');
  writeFileSync(file, JSON.stringify(trace));
  const replay = await startAdapter();
  try {
    await launch(replay, { traceFile: file, stopOnEntry: true });
    const first = await where(replay);
    assert.deepEqual([first.fn, first.line], ['total', BREAK_LINE]);
    await move(replay, 'next');
    const second = await where(replay);
    assert.deepEqual([second.fn, second.line], ['total', 7], 'the loop goes on to its next element');
    await move(replay, 'stepBack');
    assert.deepEqual([(await where(replay)).line], [BREAK_LINE], 'and back');
  } finally {
    await replay.close();
  }
});

test('refused in one line: on 3.11 (debugpy holds the one settrace slot), in an lldb session, in a session that is gone', HUNG, async () => {
  const s = await startSession('py311', VENV_PYTHON, process.env);
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: s.id, threadId: s.threadId, reason: 'breakpoint', debugType: 'debugpy' });
  await assert.rejects(
    record(s.id),
    (e: Error) => /^Cannot record from here: .*Python 3\.12\+.*Python 3\.11 there is one settrace slot/.test(e.message) && !e.message.includes('\n'),
  );
  assert.ok(!s.sent.includes('continue'), 'nothing resumed the session');

  await server.connection.sendNotification('execverify/liveStopped', { sessionId: 'c', threadId: 1, reason: 'breakpoint', debugType: 'lldb-dap' });
  const said = (pattern: RegExp) => (e: Error) => pattern.test(e.message);
  await assert.rejects(
    record('c'),
    said(/^Cannot record from here: this is a “lldb-dap” session, .* For C, record the whole program: execverify trace prog\.c --entry main --via lldb\.$/),
  );
  await server.connection.sendNotification('execverify/liveEnded', { sessionId: 'c' });
  await assert.rejects(record('c'), said(/^Cannot record from here: the debug session has ended$/));
  await assert.rejects(server.connection.sendRequest('execverify/recordFromHere', { session: 'x' }), /sessionId/);
});

test('cancelled at a breakpoint inside the call: the request ends as cancelled, the program runs on unharmed', HUNG, async () => {
  const s = await startSession('cancel', python312(), { ...process.env, PYTHONPATH: work });
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: s.id, threadId: s.threadId, reason: 'breakpoint', debugType: 'debugpy' });
  const cancel = new CancellationTokenSource();
  const recording = server.connection.sendRequest('execverify/recordFromHere', { sessionId: s.id }, cancel.token);
  const outcome = recording.then(
    () => 'recorded',
    (e: Error & { data?: { code?: string } }) => e.data?.code ?? e.message,
  );
  let continues = 0;
  // The second `continue` comes at the breakpoint inside the call: the user cancels there; the editor forwards it once the request has ended.
  s.before = async (command) => {
    if (command !== 'continue' || ++continues !== 2) return;
    cancel.cancel();
    await outcome;
    // The user runs the program on to its end: no breakpoint stops it any more.
    await s.dap.request('setBreakpoints', { source: { path: PROGRAM }, breakpoints: [] });
  };
  const ended = s.dap.waitFor('terminated');
  assert.equal(await outcome, 'cancelled');
  // The recorder in the program ends with the call and writes nowhere: the program goes on to its end as it would.
  await ended;
  assert.match(s.stdout(), /\(14, 'sum=14'\)/);
  assert.doesNotMatch(s.stderr(), /Traceback|Error/);
});
