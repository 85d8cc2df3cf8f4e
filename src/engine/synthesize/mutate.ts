// `execverify harvest … --mutate N`: coverage-guided mutation of the inputs of
// samples already in a store (harvested or synthesized), through the same
// candidate stages as synthesis. The mutated samples join the store; their
// drops go to work/mutate-drops.jsonl (the harvest's drops.jsonl is its own).
import * as path from 'node:path';
import type { SampleRecord } from '../dataset/record';
import { readStore, SampleStore } from '../dataset/store';
import { CandidateProcessor, type RunCounters, type SynthesisDeps } from './pipeline';

export interface MutateStoreOptions {
  out: string;
  /** Mutated inputs tried per stored call. */
  count: number;
  seed?: number;
  concurrency?: number;
  hashSeed?: number;
  /** What the user gave the project's tests (`--pass-env`): the re-runs get it too. */
  jobEnv?: Record<string, string>;
}

export async function mutateStore(
  options: MutateStoreOptions,
  deps: Pick<SynthesisDeps, 'python' | 'tracerDir' | 'env' | 'questioner' | 'scorer' | 'signal' | 'now'>,
): Promise<RunCounters> {
  const bases: SampleRecord[] = readStore(options.out).items.filter((r) => r.provenance.synthesis?.source !== 'mutated');
  const store = SampleStore.open(options.out, { env: deps.env });
  const processor = new CandidateProcessor(
    store,
    {
      out: options.out,
      dropsFile: path.join(options.out, 'work', 'mutate-drops.jsonl'),
      mutate: options.count,
      mutateSeed: options.seed ?? 0,
      ...(options.concurrency ? { concurrency: options.concurrency } : {}),
      ...(options.hashSeed !== undefined ? { hashSeed: options.hashSeed } : {}),
      ...(options.jobEnv ? { jobEnv: options.jobEnv } : {}),
    },
    deps,
  );
  try {
    const analyses = await processor.analyse(bases.map((r) => ({ code: r.code, calls: [r.entry] })));
    let next = 0;
    const worker = async () => {
      for (;;) {
        if (deps.signal?.aborted) return;
        const i = next++;
        const r = bases[i];
        if (!r) return;
        const a = analyses[i]!;
        // Only a call of a top-level function with literal arguments can be mutated.
        if (a.problem === 'syntax' || !a.calls?.[0]?.function || !a.astHash) continue;
        await processor.mutateStored({
          key: r.hashes.candidate,
          code: r.code,
          call: r.entry,
          function: r.provenance.function,
          astHash: a.astHash,
          nesting: a.nesting ?? 0,
          provenance: r.provenance,
          program: `${r.provenance.file}\u0000${r.provenance.function}\u0000${r.code}`,
          level: r.provenance.synthesis?.level ?? null,
          spec: r.provenance.synthesis?.spec ?? r.id,
          seed: options.seed ?? 0,
        });
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
    return processor.counters;
  } finally {
    await processor.close();
    store.close();
  }
}
