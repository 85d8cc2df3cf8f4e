// The outside world for a replay session in Node (files and the decoder),
// shared by the standalone adapter and the inline VS Code adapter.
import { readFile } from 'node:fs/promises';
import type { Trace } from '../engine/trace/schema';
import type { Recorder, ReplayDebugSession, ReplaySessionDeps } from './replayDebugSession';
import { toReplayTrace } from './replayTrace';

export function replaySessionDeps(options: {
  recorder: Recorder;
  cwd: string;
  onTrace?: ((trace: Trace, session: ReplayDebugSession) => void) | undefined;
}): ReplaySessionDeps {
  return {
    recorder: options.recorder,
    cwd: options.cwd,
    decode: toReplayTrace,
    readFile: async (file) => {
      try {
        return await readFile(file, 'utf8');
      } catch {
        return undefined;
      }
    },
    ...(options.onTrace ? { onTrace: options.onTrace } : {}),
  };
}
