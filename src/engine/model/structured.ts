// Reading a JSON answer out of model text: exact JSON when the server honoured
// the response format, otherwise the first JSON value in code fences or prose.
// Always validated with the caller's zod schema; failures are values.
import type { z } from 'zod';

export type StructuredResult<T> = { ok: true; value: T } | { ok: false; error: string };

function candidates(text: string): string[] {
  const out: string[] = [];
  const trimmed = text.trim();
  out.push(trimmed);
  const fence = /```(?:json)?\s*\n?([\s\S]*?)```/i.exec(trimmed);
  if (fence?.[1]) out.push(fence[1].trim());
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = trimmed.indexOf(open);
    const end = trimmed.lastIndexOf(close);
    if (start >= 0 && end > start) out.push(trimmed.slice(start, end + 1));
  }
  return out;
}

export function parseStructured<S extends z.ZodTypeAny>(text: string, schema: S): StructuredResult<z.infer<S>> {
  let lastError = 'no JSON value in the answer';
  for (const candidate of candidates(text)) {
    let json: unknown;
    try {
      json = JSON.parse(candidate);
    } catch {
      continue;
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return { ok: true, value: parsed.data as z.infer<S> };
    lastError = `the JSON does not match the answer schema: ${parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ')}`;
  }
  return { ok: false, error: lastError };
}
