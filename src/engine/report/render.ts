// A Report as Markdown and as one self-contained HTML page: Vega-Lite charts
// (vega, vega-lite and vega-embed inlined, so the page needs no network), the
// numbers in tables, every text from a model or a program escaped.
import type { Report, ReportExample, ReportMetric } from './schema';

/** The chart libraries' browser builds, inlined in the page in this order. */
export interface ChartLibraries {
  vega: string;
  vegaLite: string;
  vegaEmbed: string;
}

export function formatMetric(m: Pick<ReportMetric, 'value' | 'unit'>): string {
  if (m.value === null) return 'n/a';
  if (m.unit === 'count') return String(Math.round(m.value));
  if (m.unit === 'percent' || m.unit === 'number') return m.value.toFixed(2);
  return `${(100 * m.value).toFixed(2)}%`;
}

const accuracy = (correct: number, n: number) => (n ? `${((100 * correct) / n).toFixed(2)}%` : 'n/a');

function cell(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const cut = flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  return cut.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/`/g, "'");
}

export function renderMarkdown(report: Report): string {
  const out: string[] = [`# ${report.title}`, ''];
  if (report.subtitle) out.push(report.subtitle, '');
  out.push(`Created ${report.created}.`, '', '| metric | value | n |', '|---|---|---|');
  for (const m of report.metrics) out.push(`| ${cell(m.name)} | ${formatMetric(m)} | ${m.n ?? ''} |`);
  for (const g of report.groups) {
    out.push('', `## ${g.name}`, '');
    if (g.about) out.push(g.about, '');
    out.push('| | n | right | accuracy |', '|---|---|---|---|');
    for (const r of g.rows) out.push(`| ${cell(r.label)} | ${r.n} | ${r.correct} | ${accuracy(r.correct, r.n)} |`);
  }
  if (report.confusion && report.confusion.cells.length) {
    const c = report.confusion;
    out.push('', `## ${c.title}`, '', `| ${c.predicted} | ${c.actual} | count |`, '|---|---|---|');
    for (const x of [...c.cells].sort((a, b) => b.count - a.count).slice(0, 20)) out.push(`| ${cell(x.predicted)} | ${cell(x.actual)} | ${x.count} |`);
  }
  if (report.examples.length) {
    out.push('', '## Worst examples', '', '| id | answer | expected | why | trace |', '|---|---|---|---|---|');
    for (const e of report.examples)
      out.push(`| ${cell(e.id)} | ${cell(e.answer, 80)} | ${cell(e.expected, 80)} | ${cell(e.reason)} | ${e.trace ? `[replay](${encodeURI(e.trace)})` : ''} |`);
  }
  if (report.notes.length) out.push('', '## Notes', '', ...report.notes.map((n) => `- ${n}`));
  return out.join('\n') + '\n';
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** JSON that is safe inside a <script> element: no `<` (so no `</script>`), no line separators. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A library's code inside a <script> element: `</script` cannot occur in it. */
function scriptCode(code: string): string {
  return code.replace(/<\/script/gi, '<\\/script');
}

/** Vega-Lite specs of the report's charts: accuracy bars per group, the confusion heat map. */
export function chartSpecs(report: Report): { id: string; spec: Record<string, unknown> }[] {
  const specs: { id: string; spec: Record<string, unknown> }[] = report.groups.map((g, i) => ({
    id: `group-${i}`,
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: Math.min(900, Math.max(240, 120 * g.rows.length)),
      height: 220,
      data: { values: g.rows.map((r) => ({ label: r.label, n: r.n, correct: r.correct, accuracy: r.n ? r.correct / r.n : 0 })) },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: { field: 'label', type: 'nominal', sort: null, title: null, axis: { labelAngle: g.rows.length > 7 ? -40 : 0, labelLimit: 200 } },
        y: { field: 'accuracy', type: 'quantitative', title: 'accuracy', scale: { domain: [0, 1] }, axis: { format: '%' } },
        color: { value: '#4c78a8' },
        tooltip: [
          { field: 'label', type: 'nominal' },
          { field: 'accuracy', type: 'quantitative', format: '.2%' },
          { field: 'correct', type: 'quantitative' },
          { field: 'n', type: 'quantitative' },
        ],
      },
    },
  }));
  const c = report.confusion;
  if (c && c.cells.length) {
    const top = [...c.cells].sort((a, b) => b.count - a.count).slice(0, 400);
    specs.push({
      id: 'confusion',
      spec: {
        $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
        data: { values: top },
        width: { step: 90 },
        height: { step: 28 },
        layer: [
          {
            mark: { type: 'rect', tooltip: true },
            encoding: {
              x: { field: 'actual', type: 'ordinal', title: c.actual, axis: { labelAngle: 0, labelLimit: 120 } },
              y: { field: 'predicted', type: 'ordinal', title: c.predicted, sort: { field: 'predicted' } },
              color: { field: 'count', type: 'quantitative', scale: { scheme: 'oranges' } },
            },
          },
          {
            mark: { type: 'text', fontSize: 11 },
            encoding: { x: { field: 'actual', type: 'ordinal' }, y: { field: 'predicted', type: 'ordinal' }, text: { field: 'count' } },
          },
        ],
      },
    });
  }
  return specs;
}

function exampleRow(e: ReportExample): string {
  const trace = e.trace
    ? `<a class="replay" href="${escapeHtml(encodeURI(e.trace))}" data-trace="${escapeHtml(e.trace)}"${e.line !== undefined ? ` data-line="${e.line}"` : ''}>replay</a>`
    : '';
  const q = e.question ? `<details><summary>question</summary><pre>${escapeHtml(e.question)}</pre></details>` : '';
  return `<tr><td><code>${escapeHtml(e.id)}</code>${q}</td><td><pre>${escapeHtml(e.answer)}</pre></td><td><pre>${escapeHtml(e.expected)}</pre></td><td>${escapeHtml(e.reason)}</td><td>${trace}</td></tr>`;
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}.sub{color:#57606a;margin:0 0 16px}
.metrics{display:flex;flex-wrap:wrap;gap:10px}.metric{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:120px}
.metric b{display:block;font-size:20px}.metric span{color:#57606a;font-size:12px}
table{border-collapse:collapse;width:100%;font-size:13px}td,th{border-bottom:1px solid #d0d7de;padding:4px 6px;text-align:left;vertical-align:top}
pre{margin:0;white-space:pre-wrap;word-break:break-word;max-height:9em;overflow:auto;font-size:12px}
.chart{margin:4px 0 12px}.notes li{color:#57606a}
@media (prefers-color-scheme: dark){body{background:#0d1117;color:#e6edf3}.metric,td,th{border-color:#30363d}.sub,.metric span,.notes li{color:#8b949e}}
`;

// Runs in the page: draws each chart; in VS Code's webview a replay link asks
// the extension to start the replay debugger on the trace instead of following it.
const MAIN = `
(function(){
  var data = JSON.parse(document.getElementById('report-charts').textContent);
  data.forEach(function(c){
    var el = document.getElementById(c.id);
    if (el && window.vegaEmbed) window.vegaEmbed(el, c.spec, {actions:false, renderer:'svg'}).catch(function(e){ el.textContent = 'chart: ' + e; });
  });
  var vscode = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : null;
  if (vscode) document.querySelectorAll('a.replay').forEach(function(a){
    a.addEventListener('click', function(ev){ ev.preventDefault(); vscode.postMessage({type:'replay', trace:a.getAttribute('data-trace'), line:Number(a.getAttribute('data-line')||0)}); });
  });
})();
`;

/** The whole page. Everything it needs is inside it: open it from disk in any browser, or in VS Code. */
export function renderHtml(report: Report, libs: ChartLibraries): string {
  const metrics = report.metrics
    .map((m) => `<div class="metric"><b>${escapeHtml(formatMetric(m))}</b><span>${escapeHtml(m.name)}${m.n !== undefined ? ` · n=${m.n}` : ''}</span></div>`)
    .join('');
  const specs = chartSpecs(report);
  const groups = report.groups
    .map(
      (g, i) =>
        `<section><h2>${escapeHtml(g.name)}</h2>${g.about ? `<p class="sub">${escapeHtml(g.about)}</p>` : ''}<div class="chart" id="group-${i}"></div>` +
        `<details><summary>table</summary><table><tr><th></th><th>n</th><th>right</th><th>accuracy</th></tr>${g.rows
          .map((r) => `<tr><td>${escapeHtml(r.label)}</td><td>${r.n}</td><td>${r.correct}</td><td>${accuracy(r.correct, r.n)}</td></tr>`)
          .join('')}</table></details></section>`,
    )
    .join('');
  const confusion =
    report.confusion && report.confusion.cells.length
      ? `<section><h2>${escapeHtml(report.confusion.title)}</h2><div class="chart" id="confusion"></div></section>`
      : '';
  const examples = report.examples.length
    ? `<section><h2>Worst examples</h2><table><tr><th>id</th><th>answer</th><th>expected</th><th>why</th><th>trace</th></tr>${report.examples.map(exampleRow).join('')}</table></section>`
    : '';
  const notes = report.notes.length
    ? `<section><h2>Notes</h2><ul class="notes">${report.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul></section>`
    : '';
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(report.title)}</title><style>${STYLE}</style></head><body>`,
    `<h1>${escapeHtml(report.title)}</h1><p class="sub">${escapeHtml([report.subtitle, `created ${report.created}`].filter(Boolean).join(' · '))}</p>`,
    `<section class="metrics">${metrics}</section>`,
    groups,
    confusion,
    examples,
    notes,
    `<script type="application/json" id="report-data">${scriptJson(report)}</script>`,
    `<script type="application/json" id="report-charts">${scriptJson(specs)}</script>`,
    `<script>${scriptCode(libs.vega)}</script>`,
    `<script>${scriptCode(libs.vegaLite)}</script>`,
    `<script>${scriptCode(libs.vegaEmbed)}</script>`,
    `<script>${MAIN}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}
