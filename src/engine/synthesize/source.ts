// The online road: one chat completion per spec from the configured endpoint
// (the model client: retries, concurrency limit, cache, accounting).
import type { ModelClient } from '../model/client';
import { chatPrompt } from '../model/prompt';
import type { AnswerSource } from './pipeline';
import { SYNTHESIS_PROMPT_VERSION } from './prompt';

export function modelSource(client: ModelClient, samples = 1): AnswerSource {
  return {
    label: client.label,
    async answer(messages, signal) {
      const completion = await client.complete({
        prompt: chatPrompt(messages),
        samples,
        templateVersion: SYNTHESIS_PROMPT_VERSION,
        ...(signal ? { signal } : {}),
      });
      return { texts: completion.samples.map((s) => s.text), usage: completion.usage };
    },
  };
}
