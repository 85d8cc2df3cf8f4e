// The sample store: an append-only JSONL file of canonical records that
// survives being killed at any moment. Each record is one line written with a
// single append; on open, a torn last line (the only damage a kill can leave)
// is cut off, so a resumed writer never sees a duplicate or a corrupt record.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ZodError } from 'zod';
import { makeRecord, RecordSchema, type SampleInput, type SampleRecord } from './record';

export const STORE_FILE = 'samples.jsonl';

/** Result of reading a JSONL file line by line: parsed values, and how many lines were bad. */
export interface JsonlRead<T> {
  items: T[];
  /** Lines that were not JSON or failed validation (never silently used). */
  invalid: number;
}

/** Reads a JSONL file, validating each line; a missing file reads as empty. */
export function readJsonl<T>(file: string, parse: (value: unknown) => T): JsonlRead<T> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { items: [], invalid: 0 };
    throw err;
  }
  const items: T[] = [];
  let invalid = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      items.push(parse(JSON.parse(line)));
    } catch {
      invalid += 1;
    }
  }
  return { items, invalid };
}

/**
 * Cuts a torn tail (bytes after the last newline, or a last line that does not
 * parse) so the next append starts on a clean line. Returns the bytes cut.
 */
export function repairTail(file: string): number {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  if (size === 0) return 0;
  const fd = fs.openSync(file, 'r+');
  try {
    // Read back from the end in chunks until the previous complete line is found.
    const chunk = 64 * 1024;
    let end = size;
    let tail = Buffer.alloc(0);
    let lastNewline = -1;
    while (end > 0) {
      const start = Math.max(0, end - chunk);
      const buf = Buffer.alloc(end - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      tail = Buffer.concat([buf, tail]);
      end = start;
      // Skip the file's final byte: a newline there ends the last line.
      const searchFrom = tail.length - 2;
      lastNewline = searchFrom >= 0 ? tail.lastIndexOf(0x0a, searchFrom) : -1;
      if (lastNewline >= 0 || end === 0) break;
    }
    const lastLineStart = lastNewline + 1;
    const lastLine = tail.subarray(lastLineStart).toString('utf8');
    let keep = end + lastLineStart;
    if (lastLine.endsWith('\n')) {
      try {
        JSON.parse(lastLine);
        keep = size;
      } catch {
        // a complete line that is not JSON: also cut
      }
    }
    if (keep < size) fs.ftruncateSync(fd, keep);
    return size - keep;
  } finally {
    fs.closeSync(fd);
  }
}

/** One JSON value per line, appended with a single write each. */
export class JsonlAppender {
  private fd: number | null = null;
  constructor(readonly file: string) {}

  append(value: unknown): void {
    if (this.fd === null) {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      this.fd = fs.openSync(this.file, 'a');
    }
    // One buffer, one write(2) on an O_APPEND descriptor: a killed process
    // leaves either the whole line or a torn tail that repairTail removes.
    fs.writeSync(this.fd, Buffer.from(JSON.stringify(value) + '\n', 'utf8'));
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

export type AddResult =
  | { added: true; record: SampleRecord }
  | { added: false; id: string; reason: 'duplicate' | 'invalid'; message?: string };

/** Refuses a second live writer on the same store (a killed one's stale lock is taken over). */
function takeLock(lockFile: string): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(fs.readFileSync(lockFile, 'utf8').trim());
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new Error(`another process (pid ${pid}) is writing to this store; wait for it or remove ${lockFile} if it is gone`);
      }
      fs.rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not lock ${lockFile}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The dataset: `DIR/samples.jsonl`. `add()` validates, skips ids already
 * present, and appends. Open it once per writer; readers use `readStore`.
 */
export class SampleStore {
  readonly file: string;
  /** Bytes of a torn last line cut off when the store was opened. */
  readonly repairedBytes: number;
  /** Lines in the file that do not validate (left in place, never read as records). */
  readonly invalidLines: number;
  private readonly ids = new Set<string>();
  private readonly candidates = new Set<string>();
  private readonly exactKeys = new Set<string>();
  private readonly nearKeys = new Set<string>();
  private readonly appender: JsonlAppender;
  private readonly lockFile: string | null;
  private count = 0;

  private constructor(dir: string, lock: boolean) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, STORE_FILE);
    this.lockFile = lock ? path.join(dir, 'samples.lock') : null;
    if (this.lockFile) takeLock(this.lockFile);
    this.repairedBytes = repairTail(this.file);
    fs.closeSync(fs.openSync(this.file, 'a')); // an empty store is a store (readers must find it)
    const { items, invalid } = readJsonl(this.file, (v) => RecordSchema.parse(v));
    this.invalidLines = invalid;
    for (const record of items) this.index(record);
    this.appender = new JsonlAppender(this.file);
  }

  /** Opens (creating) the store in `dir`; `lock` keeps a second writer out. */
  static open(dir: string, options: { lock?: boolean } = {}): SampleStore {
    return new SampleStore(dir, options.lock ?? true);
  }

  private index(record: SampleRecord): void {
    if (this.ids.has(record.id)) return;
    this.ids.add(record.id);
    this.candidates.add(record.hashes.candidate);
    this.exactKeys.add(record.hashes.exact);
    this.nearKeys.add(record.hashes.near);
    this.count += 1;
  }

  get size(): number {
    return this.count;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** A captured call already stored (resume skips it). */
  hasCandidate(key: string): boolean {
    return this.candidates.has(key);
  }

  hasExact(key: string): boolean {
    return this.exactKeys.has(key);
  }

  hasNear(key: string): boolean {
    return this.nearKeys.has(key);
  }

  /** Validates and appends one sample (a full record, or its parts); a known id is not written twice. */
  add(sample: SampleRecord | SampleInput): AddResult {
    let record: SampleRecord;
    try {
      record = 'id' in sample && 'schema' in sample ? RecordSchema.parse(sample) : makeRecord(sample as SampleInput);
    } catch (err) {
      const message = err instanceof ZodError ? err.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : String(err);
      return { added: false, id: '', reason: 'invalid', message };
    }
    if (this.ids.has(record.id)) return { added: false, id: record.id, reason: 'duplicate' };
    this.appender.append(record);
    this.index(record);
    return { added: true, record };
  }

  close(): void {
    this.appender.close();
    if (this.lockFile) fs.rmSync(this.lockFile, { force: true });
  }
}

/** Reads every valid record of a store (a directory or its samples.jsonl). */
export function readStore(location: string): JsonlRead<SampleRecord> {
  const file = fs.existsSync(location) && fs.statSync(location).isDirectory() ? path.join(location, STORE_FILE) : location;
  if (!fs.existsSync(file)) {
    throw new Error(`no sample store at ${location}: run \`execverify harvest PROJECT --out DIR\` first, then pass DIR`);
  }
  const seen = new Set<string>();
  const read = readJsonl(file, (v) => RecordSchema.parse(v));
  // A record appended twice by two old writers is still read once.
  const items = read.items.filter((r) => (seen.has(r.id) ? false : (seen.add(r.id), true)));
  return { items, invalid: read.invalid };
}
