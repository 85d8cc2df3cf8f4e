// What the editor draws from the server's memory: inline results for a
// document (predictions, verdicts, whole-call question verdicts) and the rows
// of the trace-vs-prediction panel. Pure functions of the RunStore.
import type { Trace } from '../engine/trace/schema';
import type { InlineItem, PanelData, PanelRow, ShownValue } from './protocol';
import { summarize, type PredictionRecord, type Run, type RunStore } from './runs';

const MAX_SHOWN = 60;

function clip(s: string, max = MAX_SHOWN): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

function valuesText(values: Record<string, ShownValue>): string {
  return Object.entries(values)
    .map(([name, v]) => `${name} = ${clip(v.value, 30)}`)
    .join(', ');
}

/** Inline results for one document, in line order. */
export function inlineItems(store: RunStore, uri: string): InlineItem[] {
  const items: InlineItem[] = [];
  const verification = store.latestVerification((v) => v.uri === uri);
  if (verification) {
    const byLine = new Map<number, typeof verification.verification.questions>();
    for (const q of verification.verification.questions) {
      if (q.line < 1) continue;
      const list = byLine.get(q.line) ?? [];
      list.push(q);
      byLine.set(q.line, list);
    }
    for (const [line, qs] of byLine) {
      const ok = qs.every((q) => q.ok);
      const text = qs
        .map((q) => (q.ok ? `✓ ${q.label}: ${clip(q.actual, 30)}` : `✗ ${q.label}: ${clip(q.predicted, 30)} (real ${clip(q.actual, 30)})`))
        .join('  ');
      items.push({
        line,
        kind: 'question',
        text,
        ok,
        hover: qs.map((q) => `${q.ok ? '✓' : '✗'} ${q.label}\n  predicted: ${q.predicted}\n  actual: ${q.actual}`).join('\n'),
      });
    }
  }
  const latest = store.latestPrediction(uri);
  // A prediction about another run than the one the debugger is in would point at the wrong lines.
  const otherRun = store.stop !== null && store.stop.runId !== null && store.stop.runId !== latest?.prediction.runId;
  if (latest && !otherRun) items.push(...predictionItems(latest));
  return items.sort((a, b) => a.line - b.line);
}

function predictionItems(record: PredictionRecord): InlineItem[] {
  const { prediction, verdict } = record;
  const who = prediction.answerer.kind === 'baseline' ? 'baseline' : prediction.answerer.name || 'model';
  if (verdict) {
    const parts: string[] = [];
    const lineName = (n: string) => (n === '-1' || n.startsWith('-1') ? 'returns' : n);
    for (const q of verdict.questions) {
      // A live step's truth that could not be read exactly: neither right nor wrong.
      if (q.unknown !== undefined) parts.push(`? ${q.kind === 'next_line' ? 'next line' : (q.var ?? q.label)} unknown`);
      else if (q.kind === 'next_line') {
        const real = verdict.actualNextLine === -1 ? 'returns' : `next line ${verdict.actualNextLine}`;
        parts.push(q.ok ? `✓ ${real}` : `✗ ${real} (predicted ${q.predicted === '(no answer)' ? 'nothing' : lineName(q.predicted)})`);
      } else if (q.var !== undefined) {
        const real = verdict.actualValues[q.var];
        const said = prediction.values[q.var];
        const realText = real ? clip(real.value, 30) : clip(q.actual, 30);
        if (q.ok) parts.push(`✓ ${q.var} = ${realText}`);
        else if (!said) parts.push(`✗ ${q.var} = ${realText} (no answer)`);
        else if (real && said.value === real.value) parts.push(`✗ ${q.var} = ${realText}: ${real.type} (predicted ${clip(said.value, 30)}: ${said.type})`);
        else parts.push(`✗ ${q.var} = ${realText} (predicted ${clip(said.value, 30)})`);
      } else {
        parts.push(q.ok ? `✓ ${q.label}` : `✗ ${q.label}: ${clip(q.actual, 30)} (predicted ${clip(q.predicted, 30)})`);
      }
    }
    return [
      {
        line: prediction.line,
        kind: 'verdict',
        text: parts.join('  ') || (verdict.ok ? '✓' : '✗'),
        // Nothing judged (every truth unknown): drawn as neither right nor wrong.
        ...(verdict.questions.length > 0 && verdict.questions.every((q) => q.unknown !== undefined) ? {} : { ok: verdict.ok }),
        hover: `${who} at step ${prediction.step}\n${verdict.questions
          .map((q) =>
            q.unknown !== undefined
              ? `? ${q.label}: predicted ${q.predicted}, unknown (${q.unknown})`
              : `${q.ok ? '✓' : '✗'} ${q.label}: predicted ${q.predicted}, actual ${q.actual}`,
          )
          .join('\n')}`,
      },
    ];
  }
  const items: InlineItem[] = [];
  const values = valuesText(prediction.values);
  if (prediction.nextLine !== null && prediction.nextLine > 0) {
    items.push({
      line: prediction.nextLine,
      kind: 'predictedNext',
      text: `◀ ${who}: runs next`,
      hover: `${who} predicts line ${prediction.nextLine} runs after line ${prediction.line}`,
    });
  }
  const tail = prediction.nextLine === -1 ? ' · returns next' : prediction.nextLine === null ? ' · no next-line answer' : '';
  items.push({
    line: prediction.line,
    kind: 'predictedValue',
    text: `${who} predicts: ${values || 'no values'}${tail}`,
    hover: prediction.problems.length > 0 ? `Problems with the answer:\n${prediction.problems.join('\n')}` : undefined,
  });
  return items;
}

/** Source line text (1-based) of a trace file, '' when out of range. */
function lineTexts(trace: Trace): string[][] {
  return trace.files.map((f) => f.source.split('\n'));
}

/**
 * For each `line` event, the index of the next event of the same frame (the
 * state after the line, SEMANTICS §2) and the line that runs next there
 * ("step over"; -1 when the frame returns or raises instead). One backward
 * pass, so it stays linear on big traces.
 */
export function followers(trace: Trace): { index: (number | null)[]; line: (number | null)[] } {
  const n = trace.steps.length;
  const index: (number | null)[] = new Array(n).fill(null);
  const line: (number | null)[] = new Array(n).fill(null);
  const following = new Map<number, number>(); // frame → index of its next event
  for (let i = n - 1; i >= 0; i--) {
    const s = trace.steps[i]!;
    if (s.event === 'line') {
      const next = following.get(s.frame);
      if (next !== undefined) {
        index[i] = next;
        const t = trace.steps[next]!;
        line[i] = t.event === 'line' ? t.line : t.event === 'return' || t.event === 'exception' ? -1 : null;
      }
    }
    if (s.event === 'call' && !s.resumed) following.delete(s.frame);
    else following.set(s.frame, i);
  }
  return { index, line };
}

/** Rows sent to the panel at most: a huge run stays responsive; the debugger still reaches every step. */
export const MAX_PANEL_ROWS = 50_000;

export function panelRows(run: Run, store: RunStore, maxRows = MAX_PANEL_ROWS): PanelRow[] {
  const trace = run.trace;
  const texts = lineTexts(trace);
  const next = followers(trace);
  const byStep = new Map<number, PredictionRecord>();
  for (const p of store.predictionsFor(run.id)) byStep.set(p.prediction.step, p);
  return trace.steps.slice(0, maxRows).map((s, i) => {
    // A line's row shows what running it changed: the diff carried by the frame's next event.
    const after = s.event === 'line' ? (next.index[i] !== null ? trace.steps[next.index[i]!] : undefined) : s;
    const changes: string[] = [];
    if (after?.set) for (const [name, v] of Object.entries(after.set)) changes.push(`${name} = ${clip(v.repr)}`);
    if (after?.del) for (const name of after.del) changes.push(`del ${name}`);
    if (s.event === 'return' && s.value) changes.push(`→ ${clip(s.value.repr)}`);
    if (s.event === 'exception' && s.exc) changes.push(`! ${s.exc.type}: ${clip(s.exc.message)}`);
    const row: PanelRow = {
      step: s.i,
      event: s.event,
      fn: s.fn,
      depth: s.depth,
      line: s.line,
      text: (texts[s.file]?.[s.line - 1] ?? '').trim(),
      changes,
      nextLine: next.line[i] ?? null,
    };
    const p = byStep.get(s.i);
    if (p) {
      row.prediction = {
        nextLine: p.prediction.nextLine,
        values: p.prediction.values,
        answerer: p.prediction.answerer.kind === 'baseline' ? 'baseline' : p.prediction.answerer.name,
        latencyMs: p.prediction.usage.latencyMs,
      };
      if (p.verdict) row.verdict = { ok: p.verdict.ok, questions: p.verdict.questions, actualValues: p.verdict.actualValues };
    }
    return row;
  });
}

export function panelData(run: Run, store: RunStore): PanelData {
  const v = store.latestVerification((x) => x.runId === run.id);
  const rows = panelRows(run, store);
  return { run: summarize(run), rows, omittedRows: run.trace.steps.length - rows.length, verification: v ? v.verification : null };
}
