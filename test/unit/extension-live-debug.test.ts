// The live-session tracker against a fake `vscode`: VS Code's
// DebugAdapterTrackerFactory for '*' follows other debuggers' sessions
// (debugpy's), never our own replay sessions, and what the editor and the
// adapter say reaches the engine's LiveFollower.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { activateExtension } from '../../src/extension/activation';
import { fake, makeContext, makeDebugSession, resetFake } from '../support/fake-vscode';
import { FakeEngineClient } from './extension-fakes';

function activate() {
  const engine = new FakeEngineClient().on('execverify/health', () => ({ state: 'baseline', endpoint: '', model: '', message: 'no endpoint' }));
  const context = makeContext();
  const api = activateExtension(context, () => engine);
  return { api, context };
}

/** The tracker VS Code would create for `session` from the one registered factory. */
function trackerFor(session: unknown) {
  assert.equal(fake.trackerFactories.length, 1);
  const { type, factory } = fake.trackerFactories[0]!;
  assert.equal(type, '*');
  return factory.createDebugAdapterTracker(session);
}

const stopped = (threadId: number | undefined, reason = 'breakpoint') => ({
  type: 'event',
  event: 'stopped',
  seq: 7,
  body: { reason, ...(threadId === undefined ? {} : { threadId }) },
});
const request = (command: string, threadId?: number) => ({ type: 'request', seq: 3, command, arguments: threadId === undefined ? {} : { threadId } });

beforeEach(() => resetFake());

test('a tracker follows a debugpy session; our own replay sessions get none', () => {
  activate();
  assert.ok(trackerFor(makeDebugSession('py', 'debugpy')), 'a debugpy session is followed');
  assert.ok(trackerFor(makeDebugSession('node', 'node')), 'any other debug type too');
  assert.equal(trackerFor(makeDebugSession('replay', 'execverify')), undefined, 'a replay session has its own predict path');
});

test('the adapter’s stops and the editor’s resumes reach the follower: current() is the stopped thread of the active session', () => {
  const { api } = activate();
  const session = makeDebugSession('py', 'debugpy');
  const tracker = trackerFor(session);
  const seen: string[] = [];
  api.live.onEvent({
    resumed: (s, how) => seen.push(`${s.id} resumed ${how}`),
    stopped: (s, t, reason) => seen.push(`${s.id} stopped ${t} ${reason}`),
    ended: (s) => seen.push(`${s.id} ended`),
  });

  assert.equal(api.live.current(), undefined, 'nothing stopped yet');
  tracker.onDidSendMessage(stopped(4));
  assert.equal(api.live.current(), undefined, 'stopped, but not the active session');
  fake.activeDebugSession = session;
  assert.deepEqual(api.live.current(), { session, threadId: 4 });

  tracker.onWillReceiveMessage(request('evaluate'));
  assert.deepEqual(api.live.current(), { session, threadId: 4 }, 'reading values does not resume');
  tracker.onWillReceiveMessage(request('next', 4));
  assert.equal(api.live.current(), undefined, 'running after next');
  tracker.onDidSendMessage(stopped(undefined, 'step'));
  assert.deepEqual(api.live.current(), { session, threadId: 4 }, 'a stop without threadId is on the thread that ran');
  tracker.onWillReceiveMessage(request('stepIn', 4));
  tracker.onDidSendMessage({ type: 'event', event: 'terminated', seq: 9 });
  assert.equal(api.live.current(), undefined, 'ended');

  assert.deepEqual(seen, ['py stopped 4 breakpoint', 'py resumed next', 'py stopped 4 step', 'py resumed stepIn', 'py ended']);
});

test('hostile adapter messages and a throwing listener reach nothing and break nothing', () => {
  const { api } = activate();
  const session = makeDebugSession('py', 'debugpy');
  fake.activeDebugSession = session;
  const tracker = trackerFor(session);
  let calls = 0;
  api.live.onEvent({
    stopped: () => {
      calls++;
      throw new Error('a listener bug');
    },
  });
  for (const m of [null, 42, 'stopped', { type: 'event', event: 'stopped' }, { type: 'event', event: 'stopped', body: { threadId: 'x', reason: 1 } }]) {
    tracker.onDidSendMessage(m);
  }
  assert.equal(api.live.current(), undefined);
  assert.equal(calls, 0);
  tracker.onDidSendMessage(stopped(2));
  assert.equal(calls, 1);
  assert.deepEqual(api.live.current(), { session, threadId: 2 }, 'the follower is right although the listener threw');
});

test('a stopped session is forgotten when its adapter stops, and the factory with the extension', () => {
  const { api, context } = activate();
  const session = makeDebugSession('py', 'debugpy');
  fake.activeDebugSession = session;
  const tracker = trackerFor(session);
  tracker.onDidSendMessage(stopped(1));
  assert.ok(api.live.current());
  tracker.onWillStopSession();
  assert.equal(api.live.current(), undefined);
  for (const d of context.subscriptions) d.dispose();
  assert.equal(fake.trackerFactories.length, 0);
});
