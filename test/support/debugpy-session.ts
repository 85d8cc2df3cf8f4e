// A user's debug session for the live tests: debugpy's adapter, the program
// launched under it with breakpoints, stopped at the first — the way VS Code's
// Python Debugger starts one (initialize, launch, setBreakpoints,
// configurationDone), over real DAP.
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DapClient } from '../../src/engine/dap/client';
import { stopProcessGroup } from '../../src/engine/dap/stops';

export interface DebugpySession {
  adapter: ChildProcess;
  dap: DapClient;
  /** The thread of the first stop. */
  threadId: number;
  /** Disconnects (the debuggee terminated) and ends the adapter's process group. */
  close(): Promise<void>;
}

export interface DebugpyLaunch {
  python: string;
  program: string;
  breakpoints: number[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  showReturnValue?: boolean;
  /** Subscribes to the adapter's events before anything is sent (output, a LiveFollower). */
  listen?(dap: DapClient): void;
}

export async function startDebugpySession(o: DebugpyLaunch): Promise<DebugpySession> {
  const adapter = spawn(o.python, ['-m', 'debugpy.adapter'], { stdio: ['pipe', 'pipe', 'inherit'], detached: true, env: o.env ?? process.env });
  const dap = new DapClient(adapter.stdout!, adapter.stdin!);
  o.listen?.(dap);
  await dap.request('initialize', { clientID: 'test', adapterID: 'debugpy', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const initialized = dap.waitFor('initialized');
  const launched = dap.request('launch', {
    request: 'launch',
    type: 'debugpy',
    name: 'user session',
    program: o.program,
    cwd: o.cwd ?? path.dirname(o.program),
    python: [o.python],
    justMyCode: true,
    ...(o.showReturnValue ? { showReturnValue: true } : {}),
    console: 'internalConsole',
  });
  launched.catch(() => undefined);
  await initialized;
  await dap.request('setBreakpoints', { source: { path: o.program }, breakpoints: o.breakpoints.map((line) => ({ line })) });
  const first = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await dap.request('configurationDone', {});
  await launched;
  const threadId = (await first).body.threadId ?? 1;
  return {
    adapter,
    dap,
    threadId,
    async close() {
      await dap.request('disconnect', { terminateDebuggee: true }).catch(() => undefined);
      await stopProcessGroup(adapter);
    },
  };
}
