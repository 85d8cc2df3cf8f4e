// Progress for long harvests: a redrawn bar on a terminal, a plain line every
// few seconds otherwise (CI logs), nothing at all when quiet. Always stderr.

export interface Progress {
  /** A new stage with an optional known total. */
  stage(name: string, total?: number): void;
  /** Work done in the current stage. */
  tick(done: number, note?: string): void;
  /** Ends the current stage with a one-line summary. */
  done(summary: string): void;
}

export const silentProgress: Progress = { stage() {}, tick() {}, done() {} };

interface Stream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export function streamProgress(stream: Stream, now: () => number = Date.now): Progress {
  const tty = Boolean(stream.isTTY);
  let name = '';
  let total: number | undefined;
  let started = 0;
  let lastDraw = 0;
  let drawn = false;
  const bar = (done: number) => {
    if (!total) return `${done}`;
    const width = 24;
    const filled = Math.min(width, Math.round((done / total) * width));
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`;
  };
  return {
    stage(stageName, stageTotal) {
      name = stageName;
      total = stageTotal;
      started = now();
      lastDraw = 0;
      drawn = false;
    },
    tick(done, note) {
      const t = now();
      // A terminal redraws ~10 times a second; a log gets a line every 5 s.
      if (t - lastDraw < (tty ? 100 : 5000)) return;
      lastDraw = t;
      const secs = ((t - started) / 1000).toFixed(0);
      const text = `${name} ${bar(done)} ${secs}s${note ? ` ${note}` : ''}`;
      if (tty) {
        const cols = stream.columns ?? 100;
        stream.write(`\r${text.slice(0, cols - 1).padEnd(Math.min(cols - 1, 100))}`);
        drawn = true;
      } else {
        stream.write(`${text}\n`);
      }
    },
    done(summary) {
      const secs = ((now() - started) / 1000).toFixed(1);
      stream.write(`${tty && drawn ? '\r\x1b[K' : ''}${name}: ${summary} (${secs}s)\n`);
    },
  };
}
