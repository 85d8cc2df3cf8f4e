// What the client sends: a chat (list of messages) or a raw text prompt (tuned
// models are often served raw with their own template), and how one becomes
// the other when the endpoint speaks the other API.
import { z } from 'zod';

export const ChatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export const PromptSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('chat'), messages: z.array(ChatMessageSchema).min(1) }),
  z.object({ kind: z.literal('text'), text: z.string() }),
]);
export type Prompt = z.infer<typeof PromptSchema>;

export function chatPrompt(messages: ChatMessage[]): Prompt {
  return { kind: 'chat', messages };
}

export function textPrompt(text: string): Prompt {
  return { kind: 'text', text };
}

/** Messages for /v1/chat/completions: a text prompt is one user message. */
export function asMessages(prompt: Prompt): ChatMessage[] {
  return prompt.kind === 'chat' ? prompt.messages : [{ role: 'user', content: prompt.text }];
}

/**
 * Text for /v1/completions. A chat prompt is joined plainly (contents separated
 * by blank lines); a template that knows the model's chat format should render
 * text itself instead.
 */
export function asText(prompt: Prompt): string {
  return prompt.kind === 'text' ? prompt.text : prompt.messages.map((m) => m.content).join('\n\n');
}
