// Token, request and latency accounting for one run, so every report can say
// what it cost: requests, retries, failures, cache hits, tokens, p50/p95 latency.
import { z } from 'zod';

export const RunStatsSchema = z.object({
  /** Logical calls (one question set, k samples). */
  calls: z.number().int().nonnegative(),
  /** HTTP attempts sent, retries included. */
  requests: z.number().int().nonnegative(),
  retries: z.number().int().nonnegative(),
  /** Calls that ended in an error after all retries. */
  failures: z.number().int().nonnegative(),
  cacheHits: z.number().int().nonnegative(),
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  /** Latency of successful HTTP attempts, in ms. */
  latencyMs: z.object({ p50: z.number().nonnegative(), p95: z.number().nonnegative(), max: z.number().nonnegative() }),
});
export type RunStats = z.infer<typeof RunStatsSchema>;

/** The q-quantile (0..1) by the nearest-rank method; 0 for no samples. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

export class Accounting {
  private calls = 0;
  private requests = 0;
  private retries = 0;
  private failures = 0;
  private cacheHits = 0;
  private promptTokens = 0;
  private completionTokens = 0;
  private latencies: number[] = [];

  call(): void {
    this.calls++;
  }
  request(): void {
    this.requests++;
  }
  retry(): void {
    this.retries++;
  }
  failure(): void {
    this.failures++;
  }
  cacheHit(): void {
    this.cacheHits++;
  }
  tokens(prompt: number, completion: number): void {
    this.promptTokens += prompt;
    this.completionTokens += completion;
  }
  latency(ms: number): void {
    this.latencies.push(ms);
  }

  snapshot(): RunStats {
    const sorted = this.latencies.slice().sort((a, b) => a - b);
    return {
      calls: this.calls,
      requests: this.requests,
      retries: this.retries,
      failures: this.failures,
      cacheHits: this.cacheHits,
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      latencyMs: {
        p50: Math.round(quantile(sorted, 0.5) * 10) / 10,
        p95: Math.round(quantile(sorted, 0.95) * 10) / 10,
        max: Math.round((sorted[sorted.length - 1] ?? 0) * 10) / 10,
      },
    };
  }
}

/** One line for a terminal. */
export function formatRunStats(stats: RunStats): string {
  return (
    `${stats.calls} calls, ${stats.requests} requests (${stats.retries} retries, ${stats.failures} failed, ${stats.cacheHits} cached), ` +
    `${stats.promptTokens} prompt + ${stats.completionTokens} completion tokens, latency p50 ${stats.latencyMs.p50} ms, p95 ${stats.latencyMs.p95} ms`
  );
}
