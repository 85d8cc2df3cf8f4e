// Reads a synthesis answer: the program (one fenced python block: the entry
// function and its helpers) and the example calls (the next fenced block, one
// call expression per line). Prose around them is ignored. An answer that
// cannot be read is dropped with a reason; whether the program parses is the
// Python side's call (synthesis.py), since only Python knows Python's grammar.

export type ProgramAnswer = { ok: true; code: string; calls: string[] } | { ok: false; reason: 'no_program' | 'conflicting_programs' | 'no_calls' };

/** At most this many example calls are taken from one answer. */
export const MAX_CALLS = 8;

export interface Block {
  lang: string;
  body: string;
}

/** The fenced code blocks of a reply, in order, with their language tag (lower-cased). */
export function fencedBlocks(text: string): Block[] {
  const out: Block[] = [];
  const re = /(^|\n)[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*\n([\s\S]*?)\n[ \t]*\2[ \t]*(?=\n|$)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push({ lang: m[3]!.toLowerCase(), body: m[4]! });
  return out;
}

const DEFINES = /^(?:async[ \t]+)?def[ \t]+[A-Za-z_]\w*[ \t]*\(/m;

function normalised(code: string): string {
  return code
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .filter(Boolean)
    .join('\n');
}

/** One call per line: blank lines, comments and a `>>> ` prompt are not calls. */
function callLines(body: string): string[] {
  return body
    .split('\n')
    .map((l) => l.trim().replace(/^>>>\s*/, ''))
    .filter((l) => l && !l.startsWith('#'))
    .slice(0, MAX_CALLS);
}

export function parseProgramAnswer(text: string): ProgramAnswer {
  const blocks = fencedBlocks(text.replace(/\r\n?/g, '\n'));
  const programIndexes = blocks.flatMap((b, i) => (DEFINES.test(b.body) && ['', 'python', 'py', 'python3'].includes(b.lang) ? [i] : []));
  if (programIndexes.length === 0) return { ok: false, reason: 'no_program' };
  const programs = new Set(programIndexes.map((i) => normalised(blocks[i]!.body)));
  if (programs.size > 1) return { ok: false, reason: 'conflicting_programs' };
  const last = programIndexes.at(-1)!;
  const callsBlock = blocks.slice(last + 1).find((b) => !DEFINES.test(b.body));
  const calls = callsBlock ? callLines(callsBlock.body) : [];
  if (calls.length === 0) return { ok: false, reason: 'no_calls' };
  return { ok: true, code: `${blocks[programIndexes[0]!]!.body.replace(/\s+$/, '')}\n`, calls };
}

/** A second-round answer: the calls of its first fenced block that defines nothing (else of the whole text). */
export function parseCallsAnswer(text: string): string[] {
  const blocks = fencedBlocks(text.replace(/\r\n?/g, '\n'));
  const block = blocks.find((b) => !DEFINES.test(b.body));
  if (block) return callLines(block.body);
  return blocks.length ? [] : callLines(text).filter((l) => /^[A-Za-z_]\w*\s*\(.*\)$/.test(l));
}
