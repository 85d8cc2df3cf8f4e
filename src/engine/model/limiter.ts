// A counting semaphore: at most `limit` HTTP requests in flight per client.
// Waiters are served in arrival order; a waiter whose signal aborts leaves the queue.

export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiters: { grant: () => void; reject: (reason: unknown) => void; signal?: AbortSignal; onAbort?: () => void }[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency limit must be a positive integer, got ${limit}`);
  }

  get inFlight(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiters.length;
  }

  /** A slot now if one is free (the returned function gives it back), else undefined. */
  tryAcquire(): (() => void) | undefined {
    if (this.active >= this.limit) return undefined;
    this.active++;
    return this.releaser();
  }

  /** Waits for a slot; the returned function gives it back (call it exactly once). */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw signal.reason;
    if (this.active < this.limit) {
      this.active++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const waiter: (typeof this.waiters)[number] = { grant: resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
    });
    return this.releaser();
  }

  /** Runs `task` holding a slot. */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await task();
    } finally {
      release();
    }
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) {
        // The slot passes straight to the next waiter: `active` stays the same.
        if (next.onAbort) next.signal?.removeEventListener('abort', next.onAbort);
        next.grant();
      } else {
        this.active--;
      }
    };
  }
}
