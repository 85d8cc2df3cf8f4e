// Answer extraction from raw model text, one parser per prompt format
// (SEMANTICS §4). The same rules as python-tracer/execverify/answers.py, which
// the trainers use; test/vectors/answers.json holds the cases both must agree on.
// Tolerant of formatting (fences, tags, prose, trailing periods), strict about
// content; the text is only sliced and read — never executed, never obeyed.
import { z } from 'zod';
import type { StructuredResult } from './structured';

export const AnswerFormatSchema = z.enum(['execverify', 'reval', 'cruxeval_output', 'cruxeval_input', 'next_step_json']);
export type AnswerFormat = z.infer<typeof AnswerFormatSchema>;

/** Longer responses are cut here before parsing (as in Python). */
export const MAX_RESPONSE_CHARS = 1 << 20;

const FENCE_RE = /^\s*```[\w+-]*\s*$/;
const PREFIX_RE = /^\s*(?:[-*]\s+)?(?:(?:question|answer|q|a)\s*\d+\s*[:.)]\s*)/i;
const ASSERT_RE = /^assert\b/;

/** Content of the last open…close block; an unclosed last block runs to the end. */
function lastBlock(text: string, open: string, close: string): string | undefined {
  const low = text.toLowerCase();
  const o = open.toLowerCase();
  const c = close.toLowerCase();
  const start = low.lastIndexOf(o);
  if (start < 0) return undefined;
  const bodyStart = start + o.length;
  const end = low.indexOf(c, bodyStart);
  if (end < 0) {
    // An unclosed tag after the last complete block: prefer the complete one.
    const prevClose = start > 0 ? low.lastIndexOf(c, start - 1) : -1;
    if (prevClose >= 0) {
      const prevOpen = prevClose > 0 ? low.lastIndexOf(o, prevClose - 1) : -1;
      if (prevOpen >= 0) return text.slice(prevOpen + o.length, prevClose);
    }
    return text.slice(bodyStart);
  }
  return text.slice(bodyStart, end);
}

/** Python's str.splitlines for the line breaks models produce. */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (/(\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029])$/.test(text)) lines.pop();
  return lines;
}

/** Python's str.strip() whitespace set (close enough for model text: JS \s plus the C0 separators). */
function pyStrip(s: string): string {
  return s.replace(/^[\s\x1c-\x1f\x85]+|[\s\x1c-\x1f\x85]+$/g, '');
}

function answerLines(block: string): string[] {
  const out: string[] = [];
  for (const raw of splitLines(block)) {
    if (FENCE_RE.test(raw)) continue;
    const line = pyStrip(raw.replace(PREFIX_RE, ''));
    if (line) out.push(line);
  }
  return out;
}

/** A sentence period is dropped; `5.` (a float literal) is kept; `-1.` is the end-of-function answer `-1` with a period. */
export function stripTrailingPeriod(text: string): string {
  const s = pyStrip(text);
  if (s.endsWith('.') && !s.endsWith('..')) {
    const head = pyStrip(s.slice(0, -1));
    if (head && (head === '-1' || !/^-?\d+$/.test(head))) return head;
  }
  return s;
}

/** Index of the first `==` outside strings and brackets (same scanner as Python). */
export function splitTopLevelEq(s: string): number | undefined {
  let depth = 0;
  let quote = '';
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (quote) {
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (s.startsWith(quote, i)) {
        i += quote.length;
        quote = '';
        continue;
      }
    } else if (c === "'" || c === '"') {
      quote = s.slice(i, i + 3) === c.repeat(3) ? c.repeat(3) : c;
      i += quote.length;
      continue;
    } else if ('([{'.includes(c)) {
      depth += 1;
    } else if (')]}'.includes(c)) {
      depth = Math.max(0, depth - 1);
    } else if (c === '=' && depth === 0 && s.startsWith('==', i)) {
      const prev = i > 0 ? s[i - 1]! : '';
      if (prev === '' || !'!<>='.includes(prev)) return i;
    }
    i += 1;
  }
  return undefined;
}

/** `assert f(x) == 3` (or `f(x) == 3`) → `3`. */
export function assertionRhs(text: string): string {
  const s = pyStrip(text);
  const idx = splitTopLevelEq(s);
  return idx !== undefined ? pyStrip(s.slice(idx + 2)) : s;
}

/** `assert f(1, 2) == 3` → `f(1, 2)`. */
export function assertionLhs(text: string): string {
  let s = pyStrip(text);
  const idx = splitTopLevelEq(s);
  if (idx !== undefined) s = pyStrip(s.slice(0, idx));
  const m = ASSERT_RE.exec(s);
  if (m) s = pyStrip(s.slice(m[0].length));
  return s;
}

function cleanSingle(text: string): string {
  const kept = splitLines(text).filter((l) => !FENCE_RE.test(l));
  return pyStrip(pyStrip(kept.join('\n')).replace(/^`+|`+$/g, ''));
}

function parseExecVerify(text: string): string[] {
  const block = lastBlock(text, '<answer>', '</answer>');
  if (block === undefined) return [];
  const lines = answerLines(block).map(stripTrailingPeriod);
  if (lines.length > 0) lines[0] = assertionRhs(lines[0]!);
  return lines;
}

function parseReval(text: string): string[] {
  const block = lastBlock(text, '[ANSWER]', '[/ANSWER]');
  if (block === undefined) return [];
  return answerLines(block).map(stripTrailingPeriod);
}

function parseCruxeval(text: string, mode: 'input' | 'output'): string[] {
  let s = text;
  if (s.includes('[ANSWER]')) s = s.split('[ANSWER]').at(-1)!;
  if (s.includes('[/ANSWER]')) s = s.split('[/ANSWER]')[0]!;
  s = cleanSingle(s);
  if (!s) return [];
  return [mode === 'output' ? assertionRhs(s) : assertionLhs(s)];
}

/**
 * The answers in a response, in order. A missing block is no answers; the
 * caller compares the count with the questions asked (missing/extra = wrong).
 */
export function parseAnswers(format: string, text: unknown): string[] {
  if (typeof text !== 'string') return [];
  const t = text.slice(0, MAX_RESPONSE_CHARS);
  switch (format) {
    case 'execverify':
      return parseExecVerify(t);
    case 'reval':
      return parseReval(t);
    case 'cruxeval_output':
      return parseCruxeval(t, 'output');
    case 'cruxeval_input':
      return parseCruxeval(t, 'input');
    default:
      return [];
  }
}

/** Most variables in a next-step answer. */
export const MAX_VARIABLES = 64;

/**
 * The interactive "next step" answer. The model is asked for exactly this
 * shape (and, where the server supports it, constrained to its JSON Schema).
 * Python's next_step_answer applies the same shape.
 */
export const NextStepAnswerSchema = z.object({
  /** Line that runs next in this frame; -1 when the function returns or raises. */
  next_line: z.number().int().safe(),
  variables: z
    .array(
      z.object({
        name: z.string(),
        /** Python repr of the value, or "Nil" when the line does not run. */
        value: z.string(),
        type: z.string(),
      }),
    )
    .max(MAX_VARIABLES),
});
export type NextStepAnswer = z.infer<typeof NextStepAnswerSchema>;

/** Where a JSON object can start: `{`, blanks, then a key or the closing brace. */
const OBJECT_START_RE = /\{[ \t\n\r]*["}]/g;
/** Decoding attempts per response: each is one pass at most, so the parse is linear. */
export const MAX_JSON_STARTS = 64;
/** An object nested deeper than this is not an answer (as in Python). */
export const MAX_JSON_DEPTH = 64;

/**
 * End (exclusive) of the bracketed value that starts at `start`, by brackets
 * and strings alone; undefined when it is unclosed or nested deeper than
 * MAX_JSON_DEPTH. For valid JSON this is where the value ends, which is where
 * Python's raw_decode stops; JSON.parse then checks the rest.
 */
function bracketedEnd(text: string, start: number): number | undefined {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
      if (i >= text.length) return undefined;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_JSON_DEPTH) return undefined;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      if (--depth === 0) return i + 1;
    }
  }
  return undefined;
}

/**
 * The interactive JSON answer: the first JSON object in the text (fences and
 * prose around it allowed) that has the NextStepAnswerSchema shape, among the
 * first MAX_JSON_STARTS places where an object can start. The rule of
 * Python's parse_next_step_json, on the same vectors; linear in the text.
 */
export function parseNextStep(text: string): StructuredResult<NextStepAnswer> {
  const t = text.slice(0, MAX_RESPONSE_CHARS);
  let error = 'no JSON object in the answer';
  let tried = 0;
  for (const m of t.matchAll(OBJECT_START_RE)) {
    if (tried++ >= MAX_JSON_STARTS) break;
    const end = bracketedEnd(t, m.index!);
    if (end === undefined) continue;
    let json: unknown;
    try {
      json = JSON.parse(t.slice(m.index!, end));
    } catch {
      continue;
    }
    const parsed = NextStepAnswerSchema.safeParse(json);
    if (parsed.success) return { ok: true, value: parsed.data };
    if (error.startsWith('no JSON'))
      error = `the JSON does not match the answer schema: ${parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
        .join('; ')}`;
  }
  return { ok: false, error };
}

/**
 * Map a next-step answer onto questions, as Python's next_step_answers does
 * (by kind and variable name; a name given twice: the last one counts).
 */
export function nextStepAnswers(answer: NextStepAnswer | undefined, questions: { kind: string; var?: string }[]): (string | null)[] {
  const byName = new Map((answer?.variables ?? []).map((v) => [v.name, v] as const));
  return questions.map((q) => {
    if (!answer) return null;
    if (q.kind === 'next_line') return String(answer.next_line);
    if (q.kind === 'state' || q.kind === 'state_any') {
      const v = typeof q.var === 'string' ? byName.get(q.var) : undefined;
      if (!v) return null;
      return v.value === 'Nil' ? 'Nil' : `${v.value}; ${v.type}`;
    }
    return null;
  });
}
