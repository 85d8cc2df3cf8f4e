// Test harness for the replay adapter: a real ReplayDebugSession served on a
// loopback port in this process, recording real programs with the real
// tracer, driven by @vscode/debugadapter-testsupport's DebugClient.
import * as net from 'node:net';
import * as path from 'node:path';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { replaySessionDeps } from '../../src/adapter/node-deps';
import { ReplayDebugSession } from '../../src/adapter/replay-debug-session';
import { tracerRecorder, type TracerPools } from '../../src/adapter/tracer-recorder';
import { testTracePools } from './trace-pool';

export const REPO = path.resolve(__dirname, '../..');
export const PROGRAMS = path.join(REPO, 'test/fixtures/programs');
export const program = (name: string) => path.join(PROGRAMS, name);

export interface Adapter {
  dc: DebugClient;
  /** Every event the adapter sent, in order. */
  events: DebugProtocol.Event[];
  close(): Promise<void>;
}

let sharedPools: TracerPools | undefined;

/** One set of tracer pools per test file, closed by `closePool` in an `after` hook. */
export function pools(): TracerPools {
  sharedPools ??= testTracePools();
  return sharedPools;
}

export async function closePool(): Promise<void> {
  await sharedPools?.close();
  sharedPools = undefined;
}

export async function startAdapter(): Promise<Adapter> {
  const recorder = tracerRecorder(pools().poolFor);
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    const session = new ReplayDebugSession(replaySessionDeps({ recorder, cwd: PROGRAMS }));
    session.setRunAsServer(true);
    session.start(socket, socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const dc = new DebugClient('node', 'unused', 'execverify');
  dc.defaultTimeout = 20_000;
  const events: DebugProtocol.Event[] = [];
  // Keep a log of every event so tests can assert order and content.
  const client = dc as unknown as { dispatch(body: string): void };
  const original = client.dispatch.bind(dc);
  client.dispatch = (body: string) => {
    const msg = JSON.parse(body) as DebugProtocol.ProtocolMessage;
    if (msg.type === 'event') events.push(msg as DebugProtocol.Event);
    original(body);
  };
  await dc.start(port);
  return {
    dc,
    events,
    async close() {
      await dc.stop().catch(() => undefined);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface LaunchOptions {
  breakpoints?: { line: number; condition?: string; hitCondition?: string }[];
  exceptionFilters?: string[];
}

/** Launches a program and waits for the first stop. */
export async function launch(a: Adapter, config: Record<string, unknown>, options: LaunchOptions = {}): Promise<DebugProtocol.StoppedEvent> {
  const stopped = a.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  await startSession(a, config, options);
  return stopped;
}

/** Runs the initialize / launch / configuration sequence without waiting for a stop. */
export async function startSession(a: Adapter, config: Record<string, unknown>, options: LaunchOptions = {}): Promise<void> {
  const { dc } = a;
  const configured = (async () => {
    await dc.waitForEvent('initialized');
    if (options.breakpoints && typeof config.program === 'string') {
      await dc.setBreakpointsRequest({ source: { path: config.program }, breakpoints: options.breakpoints });
    }
    await dc.setExceptionBreakpointsRequest({ filters: options.exceptionFilters ?? ['uncaught'] });
    await dc.configurationDoneRequest();
  })();
  await dc.initializeRequest({ adapterID: 'execverify', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path', supportsProgressReporting: true });
  await dc.launchRequest({ type: 'execverify', request: 'launch', name: 'test', ...config } as DebugProtocol.LaunchRequestArguments);
  await configured;
}

/** Where the adapter is now: top frame name and line, and the step index. */
export async function where(a: Adapter): Promise<{ fn: string; line: number; depth: number; frames: DebugProtocol.StackFrame[] }> {
  const st = await a.dc.stackTraceRequest({ threadId: 1 });
  const top = st.body.stackFrames[0]!;
  return { fn: top.name, line: top.line, depth: st.body.stackFrames.length, frames: st.body.stackFrames };
}

/** Sends a stepping request and waits for the stop it causes. */
export async function move(
  a: Adapter,
  request: 'next' | 'stepIn' | 'stepOut' | 'stepBack' | 'continue' | 'reverseContinue',
): Promise<DebugProtocol.StoppedEvent> {
  const stopped = a.dc.waitForEvent('stopped') as Promise<DebugProtocol.StoppedEvent>;
  const args = { threadId: 1 };
  switch (request) {
    case 'next':
      await a.dc.nextRequest(args);
      break;
    case 'stepIn':
      await a.dc.stepInRequest(args);
      break;
    case 'stepOut':
      await a.dc.stepOutRequest(args);
      break;
    case 'stepBack':
      await a.dc.stepBackRequest(args);
      break;
    case 'continue':
      await a.dc.continueRequest(args);
      break;
    case 'reverseContinue':
      await a.dc.reverseContinueRequest(args);
      break;
  }
  return stopped;
}

/** Variables of the top frame's Locals scope, as name → value. */
export async function locals(a: Adapter, frameIndex = 0): Promise<Record<string, DebugProtocol.Variable>> {
  const st = await a.dc.stackTraceRequest({ threadId: 1 });
  const scopes = await a.dc.scopesRequest({ frameId: st.body.stackFrames[frameIndex]!.id });
  const vars = await a.dc.variablesRequest({ variablesReference: scopes.body.scopes[0]!.variablesReference });
  return Object.fromEntries(vars.body.variables.map((v) => [v.name, v]));
}
