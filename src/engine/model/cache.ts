// The on-disk response cache: re-running a harvest or an evaluation with the
// same endpoint, model, prompt, parameters and template version costs nothing.
// Entries are written atomically (temp file + rename) and validated on read;
// a corrupt or foreign entry is a miss, never an error. The API key is not part
// of the key and never written.
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export const CACHE_FORMAT = 'execverify.model-cache/1';

export const CachedSampleSchema = z.object({
  text: z.string(),
  finishReason: z.string().nullable(),
});

export const CacheEntrySchema = z.object({
  format: z.literal(CACHE_FORMAT),
  key: z.string(),
  model: z.string(),
  samples: z.array(CachedSampleSchema),
  usage: z.object({ promptTokens: z.number().int().nonnegative(), completionTokens: z.number().int().nonnegative() }),
  /** 'json_schema' when the answer was produced under a JSON-schema response format. */
  structured: z.enum(['json_schema', 'text']),
  createdAt: z.string(),
});
export type CacheEntry = z.infer<typeof CacheEntrySchema>;

/** Everything that changes the answer — and nothing secret. */
export interface CacheKeyParts {
  endpoint: string;
  model: string;
  api: string;
  prompt: unknown;
  parameters: Record<string, unknown>;
  templateVersion: string | undefined;
}

/** JSON with sorted keys, so equal parts hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function cacheKey(parts: CacheKeyParts): string {
  return createHash('sha256').update(CACHE_FORMAT).update('\0').update(canonicalJson(parts)).digest('hex');
}

export interface ResponseCache {
  get(key: string): Promise<CacheEntry | undefined>;
  put(entry: CacheEntry): Promise<void>;
}

/** Files under `dir/ab/<key>.json`; safe to share between processes. */
export class DiskCache implements ResponseCache {
  constructor(readonly dir: string) {}

  private file(key: string): string {
    return path.join(this.dir, key.slice(0, 2), `${key}.json`);
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    let text: string;
    try {
      text = await fs.readFile(this.file(key), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const entry = CacheEntrySchema.safeParse(JSON.parse(text));
      return entry.success && entry.data.key === key ? entry.data : undefined;
    } catch {
      return undefined;
    }
  }

  async put(entry: CacheEntry): Promise<void> {
    const file = this.file(entry.key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await fs.writeFile(temp, JSON.stringify(entry));
      await fs.rename(temp, file);
    } catch (err) {
      await fs.rm(temp, { force: true });
      throw err;
    }
  }
}

/** For tests and for callers that want a per-process cache only. */
export class MemoryCache implements ResponseCache {
  readonly entries = new Map<string, CacheEntry>();
  async get(key: string) {
    return this.entries.get(key);
  }
  async put(entry: CacheEntry) {
    this.entries.set(entry.key, entry);
  }
}
