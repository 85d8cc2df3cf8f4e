// The sample store: an append-only JSONL file of canonical records that
// survives being killed at any moment. Each record is one line written with a
// single append; on open, a torn last line (the only damage a kill can leave)
// is cut off, so a resumed writer never sees a duplicate or a corrupt record.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ZodError } from 'zod';
import { environmentSecrets, findSecrets, type EnvironmentSecret } from '../harvest/credentials';
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

export type AddResult = { added: true; record: SampleRecord } | { added: false; id: string; reason: 'duplicate' | 'invalid' | 'credential'; message?: string };

/**
 * Where a record holds a credential: each string of it (code, prompt,
 * answers, frames, provenance...) scanned on its own, so a finding names its
 * field. Empty when the record is clean. Never holds the secret itself.
 */
export function credentialsInRecord(record: SampleRecord, secrets: readonly EnvironmentSecret[]): { field: string; kind: string }[] {
  const out: { field: string; kind: string }[] = [];
  const visit = (value: unknown, field: string): void => {
    if (typeof value === 'string') {
      for (const f of findSecrets(value, secrets)) out.push({ field, kind: f.kind });
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => visit(v, `${field}[${i}]`));
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        visit(k, field ? `${field}.${k}` : k);
        visit(v, field ? `${field}.${k}` : k);
      }
    }
  };
  visit(record, '');
  return out;
}

/** Another live process holds the store: one line that says who and what to do. */
export class StoreBusyError extends Error {
  override name = 'StoreBusyError';
  constructor(
    readonly lockFile: string,
    readonly pid: number | null,
  ) {
    super(
      pid === null
        ? `${path.dirname(lockFile)} is being opened by another process right now; wait for it to finish, or remove ${lockFile} if no harvest is running`
        : `another process (pid ${pid}) is writing to ${path.dirname(lockFile)}; wait for it to finish or use another --out (remove ${lockFile} only if pid ${pid} is not a harvest)`,
    );
  }
}

/** The pid a lock file holds, null when it holds none (being written, or damaged), undefined when it is gone. */
function lockHolder(file: string): number | null | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const pid = Number(text);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** A lock file without a pid older than this was left by a writer that died between create and write. */
const EMPTY_LOCK_STALE_MS = 10_000;

function createLock(file: string): boolean {
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/**
 * Takes the store's lock: an O_EXCL file holding this pid. A live holder
 * means StoreBusyError; a dead one's lock is taken over, under a second
 * O_EXCL file (`.takeover`) so two processes that both find it stale never
 * both win. Returns the dead holder's pid when its lock was taken over.
 */
function takeLock(lockFile: string): number | null {
  const guard = `${lockFile}.takeover`;
  for (let attempt = 0; attempt < 50; attempt++) {
    if (createLock(lockFile)) return null;
    const holder = lockHolder(lockFile);
    if (holder === undefined) continue; // released in between: try again
    if (holder === process.pid) {
      // this process's own earlier writer (not closed): the same process may reopen its store
      fs.writeFileSync(lockFile, String(process.pid));
      return null;
    }
    if (holder === null) {
      const age = Date.now() - fs.statSync(lockFile).mtimeMs;
      if (age < EMPTY_LOCK_STALE_MS) throw new StoreBusyError(lockFile, null);
    } else if (isAlive(holder)) {
      throw new StoreBusyError(lockFile, holder);
    }
    // Stale: take it over, one process at a time.
    if (!createLock(guard)) {
      const taker = lockHolder(guard);
      if (typeof taker === 'number' && !isAlive(taker)) fs.rmSync(guard, { force: true });
      else pause(10); // another process is taking it over this instant
      continue;
    }
    try {
      if (lockHolder(lockFile) !== holder) continue; // someone else took it over first
      fs.rmSync(lockFile, { force: true });
      if (createLock(lockFile)) return holder ?? 0;
    } finally {
      fs.rmSync(guard, { force: true });
    }
  }
  throw new StoreBusyError(lockFile, lockHolder(lockFile) ?? null);
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
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
  private readonly secrets: readonly EnvironmentSecret[];
  /** The pid of a dead writer whose stale lock this store took over, else null. */
  readonly tookOverFrom: number | null = null;
  private closed = false;
  private count = 0;

  private constructor(dir: string, lock: boolean, env: NodeJS.ProcessEnv) {
    this.secrets = environmentSecrets(env);
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, STORE_FILE);
    this.lockFile = lock ? path.join(dir, 'samples.lock') : null;
    if (this.lockFile) this.tookOverFrom = takeLock(this.lockFile);
    try {
      this.repairedBytes = repairTail(this.file);
      fs.closeSync(fs.openSync(this.file, 'a')); // an empty store is a store (readers must find it)
      const { items, invalid } = readJsonl(this.file, (v) => RecordSchema.parse(v));
      this.invalidLines = invalid;
      for (const record of items) this.index(record);
    } catch (err) {
      if (this.lockFile) fs.rmSync(this.lockFile, { force: true });
      throw err;
    }
    this.appender = new JsonlAppender(this.file);
  }

  /**
   * Opens (creating) the store in `dir`; `lock` keeps a second writer out.
   * `env` (default this process's): the values of its secret-looking
   * variables are refused in any record, whatever their shape.
   */
  static open(dir: string, options: { lock?: boolean; env?: NodeJS.ProcessEnv } = {}): SampleStore {
    return new SampleStore(dir, options.lock ?? true, options.env ?? process.env);
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

  /**
   * Validates and appends one sample (a full record, or its parts); a known
   * id is not written twice. The last gate before disk: a record holding a
   * credential (the rules of credentials.ts, or a secret value of the
   * environment) is refused, whoever built it.
   */
  add(sample: SampleRecord | SampleInput): AddResult {
    let record: SampleRecord;
    try {
      record = 'id' in sample && 'schema' in sample ? RecordSchema.parse(sample) : makeRecord(sample as SampleInput);
    } catch (err) {
      const message = err instanceof ZodError ? err.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : String(err);
      return { added: false, id: '', reason: 'invalid', message };
    }
    if (this.ids.has(record.id)) return { added: false, id: record.id, reason: 'duplicate' };
    const found = credentialsInRecord(record, this.secrets);
    if (found.length > 0) {
      const where = [...new Set(found.map((f) => `${f.kind} in ${f.field}`))].slice(0, 4).join(', ');
      return {
        added: false,
        id: record.id,
        reason: 'credential',
        message: `the sample holds what looks like a credential (${where}) and was not stored; remove the secret from the code or its values (or harvest with --secrets redact) and try again`,
      };
    }
    this.appender.append(record);
    this.index(record);
    return { added: true, record };
  }

  /** Closes the file and gives the lock back (once: a later close never removes another writer's lock). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.appender.close();
    if (this.lockFile && lockHolder(this.lockFile) === process.pid) fs.rmSync(this.lockFile, { force: true });
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
