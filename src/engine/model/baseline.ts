// The trivial baseline: no model, the answers a lazy reader would give — the
// next line is the line below, values do not change, the output is None, every
// line runs. It writes them in the template's answer format, so the same
// parser and judge score it, and every report can show a model's lift over it.
// It is always labelled "baseline", never as a model.
import { Accounting, type RunStats } from './accounting';
import type { AnswerFormat } from './answers';
import type { StreamEvent } from './client';
import type { AnswerRequest, BaselineQuestion, Provider, ProviderInfo, ProviderReply } from './provider';
import type { DecodedTrace } from '../trace/decode';

export const BASELINE_LABEL = 'baseline';

/** One answer as a line of text in `format` (next-line answers as source text or line number). */
function answerText(q: BaselineQuestion, format: AnswerFormat): string {
  switch (q.kind) {
    case 'next_line':
      // The line formats answer with the verbatim source text; the JSON one with a line number.
      if (q.following.line < 0) return '-1';
      return format === 'next_step_json' ? String(q.following.line) : q.following.text;
    case 'state':
    case 'state_any':
      return q.before ? `${q.before.repr}; ${q.before.type}` : 'Nil';
    case 'output':
      return 'None';
    case 'input':
      // There is no trivial input; an empty argument list is the lazy guess.
      return '()';
    case 'coverage':
      return 'YES';
  }
}

/** The whole reply text for `questions` in `format`. */
export function baselineText(format: AnswerFormat, questions: readonly BaselineQuestion[]): string {
  switch (format) {
    case 'execverify':
      return `<answer>\n${questions.map((q) => answerText(q, format)).join('\n')}\n</answer>`;
    case 'reval':
      return `[ANSWER]\n${questions.map((q) => answerText(q, format)).join('\n')}\n[/ANSWER]`;
    case 'cruxeval_output':
      return '[ANSWER]\nNone\n[/ANSWER]';
    case 'cruxeval_input':
      return '[ANSWER]\nf()\n[/ANSWER]';
    case 'next_step_json': {
      const next = questions.find((q) => q.kind === 'next_line');
      const variables = questions
        .filter((q): q is Extract<BaselineQuestion, { kind: 'state' | 'state_any' }> => q.kind === 'state' || q.kind === 'state_any')
        .map((q) => (q.before ? { name: q.var, value: q.before.repr, type: q.before.type } : { name: q.var, value: 'Nil', type: 'NoneType' }));
      return JSON.stringify({ next_line: next && next.kind === 'next_line' ? next.following.line : -1, variables });
    }
  }
}

export class BaselineProvider implements Provider {
  readonly info: ProviderInfo = Object.freeze({ kind: 'baseline', label: BASELINE_LABEL });
  readonly accounting = new Accounting();

  async answer(request: AnswerRequest): Promise<ProviderReply> {
    this.accounting.call();
    const text = baselineText(request.format, request.questions);
    const k = request.samples ?? 1;
    // Deterministic: k samples are k copies (pass@k = pass@1 for the baseline).
    return {
      provider: this.info,
      samples: Array.from({ length: k }, () => ({ text, finishReason: 'stop' })),
      usage: { promptTokens: 0, completionTokens: 0 },
      cached: false,
    };
  }

  async *stream(request: AnswerRequest): AsyncGenerator<StreamEvent> {
    const reply = await this.answer(request);
    for (const [i, s] of reply.samples.entries()) yield { type: 'delta', sample: i, text: s.text };
    yield {
      type: 'done',
      completion: { samples: reply.samples, usage: reply.usage, structured: 'text', cached: false, model: BASELINE_LABEL },
    };
  }

  stats(): RunStats {
    return this.accounting.snapshot();
  }

  close(): void {}
}

/** Where a question points in a trace: the k-th run of line L in frame F, and for state questions v. */
export interface QuestionSite {
  kind: BaselineQuestion['kind'];
  frame?: number;
  line?: number;
  k?: number;
  var?: string;
}

/**
 * The baseline's view of a question, from the trace: the line below L in the
 * source (skipping blank and comment lines) and v's value when L's run began.
 */
export function baselineQuestion(decoded: DecodedTrace, site: QuestionSite): BaselineQuestion {
  switch (site.kind) {
    case 'output':
    case 'input':
    case 'coverage':
      return { kind: site.kind };
    case 'next_line': {
      const file = site.frame !== undefined ? (decoded.frame(site.frame)?.file ?? 0) : 0;
      const lines = (decoded.trace.files[file]?.source ?? '').split('\n');
      for (let n = (site.line ?? 0) + 1; n <= lines.length; n++) {
        const text = (lines[n - 1] ?? '').trim();
        if (text && !text.startsWith('#')) return { kind: 'next_line', following: { line: n, text } };
      }
      return { kind: 'next_line', following: { line: -1, text: '' } };
    }
    case 'state':
    case 'state_any': {
      const name = site.var ?? '';
      let before: { repr: string; type: string } | null = null;
      if (site.frame !== undefined && site.line !== undefined) {
        const info = decoded.frame(site.frame);
        let seen = 0;
        for (const i of info?.steps ?? []) {
          const s = decoded.steps[i]!;
          if (s.event === 'line' && s.line === site.line && ++seen === (site.k ?? 1)) {
            const value = decoded.locals(i)[name];
            before = value ? { repr: value.repr, type: value.type } : null;
            break;
          }
        }
      }
      return { kind: site.kind, var: name, before };
    }
  }
}

export function isBaseline(provider: Provider): boolean {
  return provider.info.kind === 'baseline';
}

export type { RunStats };
