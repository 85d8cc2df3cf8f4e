// Prompt prefix sharing for bench/model.bench.ts (filled in below once the templates exist).
export async function measurePrefixSharing(_share: (prompts: string[]) => unknown): Promise<void> {
  console.log('prefix sharing: prompt templates not available yet');
}
