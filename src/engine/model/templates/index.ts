// Prompt templates: versioned data files (the *.json next to this file), a
// user directory that overrides them by name, and the renderer. Code comes
// before the questions in every template, so prompts about the same code share
// their longest prefix (server-side prefix caching).
import { z } from 'zod';
import { chatPrompt, textPrompt, type Prompt } from '../prompt';
import { AnswerFormatSchema, type AnswerFormat } from '../answers';
import type { Question, QuestionKind } from '../../questions/schema';
import execverify from './execverify.json';
import execverifyAuthors from './execverify-authors.json';
import reval from './reval.json';
import cruxevalOutput from './cruxeval-output.json';
import cruxevalInput from './cruxeval-input.json';
import nextStep from './next-step.json';
import predictTest from './predict-test.json';

const KINDS = ['output', 'input', 'next_line', 'state', 'state_any', 'coverage'] as const;
const PROMPT_FIELDS = [
  'code',
  'code_numbered',
  'code_numbered_assert',
  'language',
  'fence',
  'call',
  'fn',
  'outputRepr',
  'line',
  'lineText',
  'k',
  'kth',
  'locals',
  'questions',
];
const QUESTION_FIELDS = ['n', 'call', 'fn', 'outputRepr', 'line', 'lineText', 'k', 'kth', 'var'];
const PLACEHOLDER_RE = /\{\{(\w+)\}\}/g;

function placeholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER_RE)].map((m) => m[1]!);
}

export const TemplateSchema = z
  .object({
    /** Referenced by this name; a user file with the same name replaces the built-in one. */
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
    /** Bumped whenever the text changes; recorded with every prompt (`name@version`). */
    version: z.number().int().positive(),
    format: AnswerFormatSchema,
    /** chat: one user message (plus `system`); text: a raw completion prompt. */
    api: z.enum(['chat', 'text']),
    /** all: one prompt asks every question; one: one prompt per question. */
    perPrompt: z.enum(['all', 'one']),
    kinds: z.array(z.enum(KINDS)).min(1),
    description: z.string().default(''),
    system: z.string().optional(),
    user: z.string(),
    question: z.record(z.enum(KINDS), z.string()),
    separator: z.string().default('\n'),
    /** Stop sequences for text completion (the official CRUXEval prompts stop at [/ANSWER]). */
    stop: z.array(z.string()).optional(),
    /** The answer is JSON validated by NextStepAnswerSchema (request structured output). */
    structured: z.boolean().default(false),
  })
  .superRefine((t, ctx) => {
    const fields = placeholders(t.user);
    for (const f of fields) {
      if (!PROMPT_FIELDS.includes(f)) ctx.addIssue({ code: 'custom', path: ['user'], message: `unknown placeholder {{${f}}}` });
    }
    const code = Math.min(...['{{code}}', '{{code_numbered}}', '{{code_numbered_assert}}'].map((p) => t.user.indexOf(p)).filter((i) => i >= 0));
    const questions = t.user.indexOf('{{questions}}');
    if (!Number.isFinite(code))
      ctx.addIssue({ code: 'custom', path: ['user'], message: 'the prompt must contain {{code}}, {{code_numbered}} or {{code_numbered_assert}}' });
    if (questions < 0) ctx.addIssue({ code: 'custom', path: ['user'], message: 'the prompt must contain {{questions}}' });
    // Code first, questions last: nothing question-specific may come before the code.
    if (Number.isFinite(code) && questions >= 0 && questions < code) {
      ctx.addIssue({ code: 'custom', path: ['user'], message: '{{questions}} must come after the code (shared prefix for prompt caching)' });
    }
    for (const kind of t.kinds) {
      const q = t.question[kind];
      if (q === undefined) ctx.addIssue({ code: 'custom', path: ['question', kind], message: `no question text for kind '${kind}'` });
      for (const f of placeholders(q ?? '')) {
        if (!QUESTION_FIELDS.includes(f)) ctx.addIssue({ code: 'custom', path: ['question', kind], message: `unknown placeholder {{${f}}}` });
      }
    }
  });
export type Template = z.infer<typeof TemplateSchema>;

export const BUILTIN_TEMPLATES: readonly Template[] = [execverify, execverifyAuthors, reval, cruxevalOutput, cruxevalInput, nextStep, predictTest].map((t) =>
  TemplateSchema.parse(t),
);

/** File access the loader needs (injected: the engine does not touch the disk itself). */
export interface TemplateFiles {
  list(dir: string): Promise<string[]>;
  read(path: string): Promise<string>;
}

export type TemplateLoad = { ok: true; templates: Map<string, Template>; overridden: string[] } | { ok: false; error: string };

/** Built-in templates, replaced or extended by every *.json file in `dir` (if given). */
export async function loadTemplates(dir: string | undefined, files?: TemplateFiles): Promise<TemplateLoad> {
  const templates = new Map(BUILTIN_TEMPLATES.map((t) => [t.name, t] as const));
  const overridden: string[] = [];
  if (!dir || !files) return { ok: true, templates, overridden };
  let names: string[];
  try {
    names = (await files.list(dir)).filter((n) => n.endsWith('.json')).sort();
  } catch (err) {
    return { ok: false, error: `cannot read the template directory ${dir}: ${(err as Error).message}` };
  }
  for (const name of names) {
    const path = `${dir.replace(/[\\/]+$/, '')}/${name}`;
    let raw: unknown;
    try {
      raw = JSON.parse(await files.read(path));
    } catch (err) {
      return { ok: false, error: `${path} is not valid JSON: ${(err as Error).message}` };
    }
    const parsed = TemplateSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return { ok: false, error: `${path}: ${issue.path.join('.') || '(root)'}: ${issue.message} — see docs/questions-and-judging.md#templates` };
    }
    if (templates.has(parsed.data.name)) overridden.push(parsed.data.name);
    templates.set(parsed.data.name, parsed.data);
  }
  return { ok: true, templates, overridden };
}

/** What a prompt is rendered from besides the questions. */
export interface RenderContext {
  /** The program source exactly as traced (line numbers refer to it). */
  code: string;
  /** The traced program's language (the trace's; absent: Python): `{{language}}` is `Python` or `C`, `{{fence}}` the code fence's tag, `python` or `c`. */
  language?: 'python' | 'c';
  /** The entry call, e.g. `f([1, 2])`. */
  call?: string;
  /** Interactive prompts: where execution is stopped and the locals there (already formatted). */
  stop?: { line: number; lineText: string; k: number; locals: string };
}

export interface RenderedPrompt {
  /** `name@version` of the template. */
  template: string;
  format: AnswerFormat;
  prompt: Prompt;
  stop?: string[];
  structured: boolean;
  /** The questions this prompt asks, in answer order. */
  questions: Question[];
}

export function ordinal(n: number): string {
  const mod100 = n % 100;
  if (mod100 >= 11 && mod100 <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}

function fill(text: string, values: Record<string, string | number | undefined>): string {
  // One pass, so text inside a value (code, a repr) is never scanned for placeholders.
  return text.replace(PLACEHOLDER_RE, (_m, name: string) => {
    const v = values[name];
    return v === undefined ? '' : String(v);
  });
}

function numbered(code: string, assertion?: string): string {
  const lines = code.replace(/\n$/, '').split('\n');
  // The ExecVerify authors' listing: the assertion is the listing's last numbered line.
  if (assertion !== undefined) lines.push(assertion);
  const w = String(lines.length).length;
  return lines.map((l, i) => `${String(i + 1).padStart(w)}  ${l}`).join('\n');
}

function questionValues(q: Question, n: number, ctx: RenderContext): Record<string, string | number | undefined> {
  const call = 'call' in q ? q.call : ctx.call;
  const fn = /^\s*([A-Za-z_][\w.]*)\s*\(/.exec(call ?? '')?.[1];
  return {
    n,
    call,
    fn,
    outputRepr: q.kind === 'input' ? q.outputRepr : undefined,
    line: 'line' in q ? q.line : undefined,
    lineText: 'lineText' in q ? q.lineText : undefined,
    k: 'k' in q ? q.k : undefined,
    kth: 'k' in q ? ordinal(q.k) : undefined,
    var: 'var' in q ? q.var : undefined,
  };
}

/**
 * Prompts for a question set: one prompt (perPrompt "all") or one per
 * question ("one"). Questions of kinds the template does not ask are left out
 * and returned in `skipped`.
 */
export function renderPrompts(template: Template, questions: readonly Question[], ctx: RenderContext): { prompts: RenderedPrompt[]; skipped: Question[] } {
  const kinds = new Set<QuestionKind>(template.kinds);
  const asked = questions.filter((q) => kinds.has(q.kind));
  const skipped = questions.filter((q) => !kinds.has(q.kind));
  const groups = template.perPrompt === 'all' ? (asked.length ? [asked] : []) : asked.map((q) => [q]);
  const first = asked.find((q) => q.kind === 'input');
  const prompts = groups.map((group) => {
    const text = group.map((q, i) => fill(template.question[q.kind]!, questionValues(q, i + 1, ctx))).join(template.separator);
    const head = group[0]!;
    const call = ctx.call ?? ('call' in head ? head.call : undefined);
    const user = fill(template.user, {
      code: ctx.code.replace(/\n$/, ''),
      code_numbered: numbered(ctx.code),
      code_numbered_assert: numbered(ctx.code, call ? `assert ${call} == ????` : undefined),
      language: ctx.language === 'c' ? 'C' : 'Python',
      fence: ctx.language === 'c' ? 'c' : 'python',
      call,
      fn: /^\s*([A-Za-z_][\w.]*)\s*\(/.exec(call ?? '')?.[1],
      outputRepr: first?.kind === 'input' ? first.outputRepr : undefined,
      line: ctx.stop?.line,
      lineText: ctx.stop?.lineText,
      k: ctx.stop?.k,
      kth: ctx.stop ? ordinal(ctx.stop.k) : undefined,
      locals: ctx.stop?.locals,
      questions: text,
    });
    const prompt =
      template.api === 'text'
        ? textPrompt(user)
        : chatPrompt([...(template.system ? [{ role: 'system' as const, content: template.system }] : []), { role: 'user' as const, content: user }]);
    return {
      template: `${template.name}@${template.version}`,
      format: template.format,
      prompt,
      ...(template.stop ? { stop: template.stop } : {}),
      structured: template.structured,
      questions: group,
    };
  });
  return { prompts, skipped };
}
