// Evaluation reports: a producer builds a ReportInput (headline metrics, bar
// groups, a confusion of mistakes, the worst examples with their traces) and
// writeReport puts report.json, report.md and a self-contained report.html
// in a folder. Used by `execverify eval`; see docs/evaluation.md#reports.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import type { Trace } from '../trace/schema';
import { renderHtml, renderMarkdown, type ChartLibraries } from './render';
import { ReportSchema, type Report, type ReportInput } from './schema';

export { chartSpecs, escapeHtml, formatMetric, renderHtml, renderMarkdown, scriptJson, type ChartLibraries } from './render';
export * from './schema';

let libraries: Promise<ChartLibraries> | undefined;
/** The browser builds of vega, vega-lite and vega-embed from node_modules, read once. */
export function chartLibraries(): Promise<ChartLibraries> {
  libraries ??= (async () => {
    const req = createRequire(__filename);
    // The packages export only their modules, so the browser build is found beside the resolved entry (both in build/).
    const read = (pkg: string, file: string) => readFile(path.join(path.dirname(req.resolve(pkg)), file), 'utf8');
    const [vega, vegaLite, vegaEmbed] = await Promise.all([
      read('vega', 'vega.min.js'),
      read('vega-lite', 'vega-lite.min.js'),
      read('vega-embed', 'vega-embed.min.js'),
    ]);
    return { vega, vegaLite, vegaEmbed };
  })();
  return libraries;
}

async function writeAtomic(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/** A file name for a trace of an example id (`DREval/90/1/path/2` → `DREval_90_1_path_2.json`). */
export function traceFileName(id: string): string {
  return `${id.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120)}.json`;
}

export interface WrittenReport {
  report: Report;
  json: string;
  markdown: string;
  html: string;
}

/**
 * Validate `input`, write `dir/report.json`, `report.md`, `report.html` and
 * each trace of `traces` (file name → trace, as the examples name them under
 * `traces/`), each file whole or not at all.
 */
export async function writeReport(dir: string, input: ReportInput, options: { traces?: ReadonlyMap<string, Trace> } = {}): Promise<WrittenReport> {
  const report = ReportSchema.parse(input);
  await mkdir(dir, { recursive: true });
  if (options.traces?.size) {
    await mkdir(path.join(dir, 'traces'), { recursive: true });
    for (const [name, trace] of options.traces) await writeAtomic(path.join(dir, 'traces', path.basename(name)), JSON.stringify(trace) + '\n');
  }
  const out = { json: path.join(dir, 'report.json'), markdown: path.join(dir, 'report.md'), html: path.join(dir, 'report.html') };
  await writeAtomic(out.json, JSON.stringify(report, null, 1) + '\n');
  await writeAtomic(out.markdown, renderMarkdown(report));
  await writeAtomic(out.html, renderHtml(report, await chartLibraries()));
  return { report, ...out };
}
