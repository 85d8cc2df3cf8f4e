// The trace-vs-prediction panel's logic, free of the DOM: rows from the
// server's PanelData, HTML for a row and for the summary, the virtual window of
// a long list, keyboard navigation and message handling. UMD: the webview loads
// it as a plain script (window.PanelModel), the Node tests require it.
(function (root, factory) {
  if (typeof module === 'object' && module.exports) module.exports = factory();
  else root.PanelModel = factory();
})(typeof self !== 'undefined' ? self : this, function () {
  'use strict';

  var ROW_HEIGHT = 22;

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }

  function lineText(n) {
    if (n === null || n === undefined) return '?';
    return n === -1 ? 'return' : String(n);
  }

  function valuesText(values) {
    var out = [];
    for (var name in values) {
      if (Object.prototype.hasOwnProperty.call(values, name)) out.push(name + ' = ' + values[name].value);
    }
    return out.join(', ');
  }

  /**
   * One view row per trace step. `status`: 'ok' / 'bad' when a verdict exists
   * ('unknown' when none of its truths could be read, a live step's),
   * 'pending' when predicted but not yet revealed, 'none' otherwise.
   * `mismatches` names what the prediction got wrong ('next' or a variable).
   */
  function buildRows(data) {
    var rows = new Array(data.rows.length);
    for (var i = 0; i < data.rows.length; i++) {
      var r = data.rows[i];
      var row = {
        step: r.step,
        event: r.event,
        fn: r.fn,
        depth: r.depth,
        line: r.line,
        text: r.text,
        real: r.event === 'line' ? 'next ' + lineText(r.nextLine) + (r.changes.length ? ' · ' + r.changes.join(', ') : '') : r.changes.join(', '),
        predicted: '',
        status: 'none',
        mismatches: [],
        questions: [],
      };
      if (r.prediction) {
        var p = r.prediction;
        var vals = valuesText(p.values);
        row.predicted = 'next ' + lineText(p.nextLine) + (vals ? ' · ' + vals : '') + ' (' + p.answerer + ', ' + Math.round(p.latencyMs) + ' ms)';
        row.status = 'pending';
      }
      if (r.verdict) {
        var judged = r.verdict.questions.some(function (x) {
          return x.unknown === undefined;
        });
        // Every truth unknown (a live step that ran on): neither ✓ nor ✗.
        row.status = !judged && r.verdict.questions.length ? 'unknown' : r.verdict.ok ? 'ok' : 'bad';
        row.questions = r.verdict.questions;
        for (var q = 0; q < r.verdict.questions.length; q++) {
          var qq = r.verdict.questions[q];
          // unknown (a live step's truth not read exactly) is no mismatch: it is neither right nor wrong.
          if (!qq.ok && qq.unknown === undefined) row.mismatches.push(qq.kind === 'next_line' ? 'next' : qq.label);
        }
      }
      rows[i] = row;
    }
    return rows;
  }

  var STATUS_MARK = { ok: '✓', bad: '✗', pending: '…', unknown: '?', none: '' };

  /** HTML of one row; every datum is escaped (trace values are untrusted text). */
  function renderRow(row, selected) {
    var cls = 'row status-' + row.status + (selected ? ' selected' : '') + (row.mismatches.length ? ' mismatch' : '');
    // Indentation by spaces, not a style attribute: the panel's CSP forbids inline styles.
    var indent = new Array(Math.min(row.depth, 20) + 1).join('  ');
    return (
      '<div class="' +
      cls +
      '" role="option" aria-selected="' +
      (selected ? 'true' : 'false') +
      '" data-step="' +
      row.step +
      '" id="step-' +
      row.step +
      '">' +
      '<span class="step">' +
      row.step +
      '</span>' +
      '<span class="mark" title="' +
      escapeHtml(row.status) +
      '">' +
      STATUS_MARK[row.status] +
      '</span>' +
      '<span class="line">' +
      escapeHtml(row.event === 'line' ? 'L' + row.line : row.event) +
      '</span>' +
      '<span class="code" title="' +
      escapeHtml(row.fn) +
      '">' +
      indent +
      escapeHtml(row.text) +
      '</span>' +
      '<span class="real">' +
      escapeHtml(row.real) +
      '</span>' +
      '<span class="predicted">' +
      escapeHtml(row.predicted) +
      (row.mismatches.length ? ' <em class="wrong">✗ ' + escapeHtml(row.mismatches.join(', ')) + '</em>' : '') +
      '</span>' +
      '</div>'
    );
  }

  function fmt(n) {
    return typeof n === 'number' ? (Math.round(n * 1000) / 1000).toString() : '–';
  }

  /** The header: the run, the rewards and the per-question verdicts of the whole-call verification. */
  function renderSummary(data) {
    var run = data.run;
    var html =
      '<div class="run"><strong>' +
      escapeHtml(run.entry) +
      '</strong> · ' +
      run.steps +
      ' steps · ' +
      escapeHtml(run.outcome) +
      ' · Python ' +
      escapeHtml(run.pythonVersion) +
      '</div>';
    if (data.omittedRows > 0)
      html +=
        '<div class="problems">Showing the first ' +
        data.rows.length +
        ' steps; ' +
        data.omittedRows +
        ' more are in the run (step the debugger to reach them).</div>';
    var v = data.verification;
    if (!v) return html + '<div class="rewards muted">No whole-call verification yet: use “Verify whole call”.</div>';
    var who = v.answerer.kind === 'baseline' ? 'baseline (no model)' : v.answerer.name;
    var tokens = v.usage.promptTokens !== undefined ? ' · ' + v.usage.promptTokens + ' + ' + (v.usage.completionTokens || 0) + ' tokens' : '';
    html +=
      '<div class="rewards">' +
      '<span class="reward">R_IO <b>' +
      fmt(v.rewards.rIO) +
      '</b></span>' +
      '<span class="reward">R_white <b>' +
      fmt(v.rewards.rWhite) +
      '</b></span>' +
      '<span class="reward">R <b>' +
      fmt(v.rewards.r) +
      '</b></span>' +
      '<span class="muted">α ' +
      fmt(v.rewards.alpha) +
      (v.rewards.gated ? ' · gated' : '') +
      ' · ' +
      escapeHtml(who) +
      ' · ' +
      Math.round(v.usage.latencyMs) +
      ' ms' +
      tokens +
      '</span>' +
      '</div>';
    html += '<table class="questions"><thead><tr><th></th><th>question</th><th>predicted</th><th>actual</th></tr></thead><tbody>';
    for (var i = 0; i < v.questions.length; i++) {
      var q = v.questions[i];
      html +=
        '<tr class="' +
        (q.ok ? 'ok' : 'bad') +
        '"><td>' +
        (q.ok ? '✓' : '✗') +
        '</td><td>' +
        escapeHtml(q.label) +
        '</td><td>' +
        escapeHtml(q.predicted) +
        '</td><td>' +
        escapeHtml(q.actual) +
        '</td></tr>';
    }
    html += '</tbody></table>';
    if (v.problems.length) html += '<div class="problems">' + v.problems.map(escapeHtml).join('<br>') + '</div>';
    return html;
  }

  /** Which rows to draw for a scroll position: only those in view plus an overscan on each side. */
  function virtualWindow(opts) {
    var rowHeight = opts.rowHeight || ROW_HEIGHT;
    var overscan = opts.overscan === undefined ? 10 : opts.overscan;
    var total = opts.total;
    var first = Math.floor(Math.max(0, opts.scrollTop) / rowHeight);
    var visible = Math.ceil(Math.max(0, opts.viewportHeight) / rowHeight) + 1;
    var start = Math.max(0, Math.min(first - overscan, total));
    var end = Math.min(total, first + visible + overscan);
    return { start: start, end: Math.max(start, end), offsetTop: start * rowHeight, totalHeight: total * rowHeight };
  }

  /** The scrollTop that brings row `index` into view, or the current one when it already is. */
  function scrollToShow(index, scrollTop, viewportHeight, rowHeight) {
    rowHeight = rowHeight || ROW_HEIGHT;
    var top = index * rowHeight;
    if (top < scrollTop) return top;
    if (top + rowHeight > scrollTop + viewportHeight) return top + rowHeight - viewportHeight;
    return scrollTop;
  }

  function initialState() {
    return { data: null, rows: [], selected: -1, scrollTop: 0 };
  }

  function indexOfStep(rows, step) {
    // Rows are in step order and steps are dense, so the index is usually the step itself.
    if (rows[step] && rows[step].step === step) return step;
    for (var i = 0; i < rows.length; i++) if (rows[i].step === step) return i;
    return -1;
  }

  /**
   * Applies a message from the extension to the state. Returns the new state;
   * unknown or malformed messages leave it unchanged (the webview trusts no input).
   */
  function applyMessage(state, msg) {
    if (!msg || typeof msg !== 'object') return state;
    if (msg.type === 'data' && msg.data && msg.data.run && Array.isArray(msg.data.rows)) {
      var rows = buildRows(msg.data);
      var sameRun = state.data && state.data.run.runId === msg.data.run.runId;
      var selected = sameRun ? Math.min(state.selected, rows.length - 1) : rows.length ? 0 : -1;
      return { data: msg.data, rows: rows, selected: selected, scrollTop: sameRun ? state.scrollTop : 0 };
    }
    if (msg.type === 'selectStep' && typeof msg.step === 'number') {
      var i = indexOfStep(state.rows, msg.step);
      if (i < 0) return state;
      return { data: state.data, rows: state.rows, selected: i, scrollTop: state.scrollTop };
    }
    return state;
  }

  /**
   * Keyboard navigation. Returns { state, post } where `post` is the message
   * to send to the extension (the debugger follows the selection), or null.
   */
  function handleKey(state, key, pageRows) {
    var n = state.rows.length;
    if (n === 0) return { state: state, post: null };
    var page = Math.max(1, pageRows || 20);
    var i = state.selected < 0 ? 0 : state.selected;
    var next = i;
    var post = null;
    switch (key) {
      case 'ArrowDown':
      case 'j':
        next = Math.min(n - 1, i + 1);
        break;
      case 'ArrowUp':
      case 'k':
        next = Math.max(0, i - 1);
        break;
      case 'PageDown':
        next = Math.min(n - 1, i + page);
        break;
      case 'PageUp':
        next = Math.max(0, i - page);
        break;
      case 'Home':
        next = 0;
        break;
      case 'End':
        next = n - 1;
        break;
      case 'n':
        next = nextMismatch(state.rows, i, 1);
        break;
      case 'N':
        next = nextMismatch(state.rows, i, -1);
        break;
      case 'Enter':
        return { state: state, post: { type: 'selectStep', step: state.rows[i].step } };
      default:
        return { state: state, post: null };
    }
    if (next !== state.selected) post = { type: 'selectStep', step: state.rows[next].step };
    return { state: { data: state.data, rows: state.rows, selected: next, scrollTop: state.scrollTop }, post: post };
  }

  function nextMismatch(rows, from, dir) {
    for (var i = from + dir; i >= 0 && i < rows.length; i += dir) if (rows[i].status === 'bad') return i;
    return from;
  }

  /** What survives a reload (webview getState/setState): small, no row data. */
  function persistable(state) {
    return { runId: state.data ? state.data.run.runId : null, selected: state.selected, scrollTop: state.scrollTop };
  }

  return {
    ROW_HEIGHT: ROW_HEIGHT,
    escapeHtml: escapeHtml,
    buildRows: buildRows,
    renderRow: renderRow,
    renderSummary: renderSummary,
    virtualWindow: virtualWindow,
    scrollToShow: scrollToShow,
    initialState: initialState,
    applyMessage: applyMessage,
    handleKey: handleKey,
    persistable: persistable,
  };
});
