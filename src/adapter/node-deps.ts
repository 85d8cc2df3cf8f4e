// The outside world for a replay session in Node (files and the decoder),
// shared by the standalone adapter and the inline VS Code adapter. A trace
// file and the paths named inside it are data from elsewhere: only regular
// files are read, never more than a bound, and nothing is opened in a way
// that can block (a FIFO with no writer, a device).
import { constants, promises as fs, type Stats } from 'node:fs';
import type { Trace } from '../engine/trace/schema';
import type { FileRead, Recorder, ReplaySessionDeps } from './replay-debug-session';
import { toReplayTrace } from './replay-trace';

const MiB = 1024 * 1024;
const CHUNK = MiB;

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}

export function formatBytes(n: number): string {
  return n >= MiB ? `${(n / MiB).toFixed(n % MiB === 0 ? 0 : 1)} MiB` : n >= 1024 ? `${Math.round(n / 1024)} KiB` : `${n} bytes`;
}

/**
 * Reads a regular file of at most `maxBytes` as UTF-8. `stat` opens nothing,
 * so a FIFO or a device is refused before any open; the open itself is
 * non-blocking (a FIFO swapped in after the stat opens at once instead of
 * waiting for a writer), and `fstat` checks the file actually opened.
 */
export async function readRegularFile(file: string, maxBytes: number): Promise<FileRead> {
  let handle: fs.FileHandle | undefined;
  try {
    const before = await fs.stat(file);
    if (!before.isFile()) return { ok: false, reason: 'not_regular', message: `${file} is ${kindOf(before)}, not a regular file` };
    if (before.size > maxBytes)
      return { ok: false, reason: 'too_large', message: `${file} is ${formatBytes(before.size)}, more than the ${formatBytes(maxBytes)} read at most` };
    handle = await fs.open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0));
    const opened = await handle.stat();
    if (!opened.isFile()) return { ok: false, reason: 'not_regular', message: `${file} is ${kindOf(opened)}, not a regular file` };
    // The size can change under us: read at most one byte past the bound to know.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const want = Math.min(CHUNK, maxBytes + 1 - total);
      if (want <= 0) break;
      const buf = Buffer.allocUnsafe(want);
      const { bytesRead } = await handle.read(buf, 0, want, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
    }
    if (total > maxBytes) return { ok: false, reason: 'too_large', message: `${file} is more than the ${formatBytes(maxBytes)} read at most` };
    return { ok: true, text: Buffer.concat(chunks, total).toString('utf8') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { ok: false, reason: code === 'ENOENT' ? 'missing' : 'unreadable', message: `${file} cannot be read (${code ?? (e as Error).message})` };
  } finally {
    await handle?.close().catch(() => {});
  }
}

export function replaySessionDeps(options: { recorder: Recorder; cwd: string; onTrace?: ((trace: Trace) => void) | undefined }): ReplaySessionDeps {
  return {
    recorder: options.recorder,
    cwd: options.cwd,
    decode: toReplayTrace,
    readFile: readRegularFile,
    ...(options.onTrace ? { onTrace: options.onTrace } : {}),
  };
}
