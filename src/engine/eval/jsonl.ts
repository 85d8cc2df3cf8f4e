// A benchmark's JSONL file read row by row through its zod schema: the first
// bad line is one error naming the file and line, in the caller's error type.
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';

export interface JsonlNaming {
  /** How messages name the file, e.g. `--data cruxeval.jsonl`. */
  name: string;
  /** Added to "cannot read …": where the file should come from. */
  readHint?: string;
  /** Added to "… is not JSON": what a line should hold. */
  lineHint?: string;
  /** The error a caller reports (a UsageError in the CLI). */
  error: (message: string) => Error;
}

/** The rows of `file` (blank lines skipped). */
export async function readJsonlRows<T>(file: string, schema: z.ZodType<T>, naming: JsonlNaming): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw naming.error(`cannot read ${naming.name}: ${why}${naming.readHint ? ` (${naming.readHint})` : ''}`);
  }
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((line, i) => {
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw naming.error(`${naming.name} line ${i + 1} is not JSON${naming.lineHint ? ` (${naming.lineHint})` : ''}`);
      }
      const row = schema.safeParse(raw);
      if (!row.success) throw naming.error(`${naming.name} line ${i + 1}: ${row.error.issues[0]!.path.join('.')}: ${row.error.issues[0]!.message}`);
      return row.data;
    });
}
