// Progress of a long evaluation: done / total, rate and ETA, written as a line
// at most every few seconds (and once at the end), so a log stays readable and
// a terminal shows where a run is.

export interface ProgressOptions {
  label: string;
  total: number;
  write: (line: string) => void;
  /** Injected in tests; Date.now by default. */
  now?: () => number;
  everyMs?: number;
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export class Progress {
  private done = 0;
  get count(): number {
    return this.done;
  }
  private readonly started: number;
  private last = -Infinity;
  private readonly now: () => number;

  constructor(private readonly options: ProgressOptions) {
    this.now = options.now ?? Date.now;
    this.started = this.now();
  }

  /** The line as it stands: `label 120/400 (30%) 12.3/s ETA 23s`. */
  line(): string {
    const { label, total } = this.options;
    const elapsed = this.now() - this.started;
    const rate = elapsed > 0 ? (1000 * this.done) / elapsed : 0;
    const eta = rate > 0 && this.done < total ? ` ETA ${formatDuration((1000 * (total - this.done)) / rate)}` : '';
    const pct = total ? Math.floor((100 * this.done) / total) : 100;
    return `${label} ${this.done}/${total} (${pct}%) ${rate.toFixed(1)}/s${eta}${this.done >= total ? ` in ${formatDuration(elapsed)}` : ''}`;
  }

  tick(n = 1): void {
    this.done += n;
    const t = this.now();
    if (this.done >= this.options.total || t - this.last >= (this.options.everyMs ?? 2000)) {
      this.last = t;
      this.options.write(this.line());
    }
  }
}
