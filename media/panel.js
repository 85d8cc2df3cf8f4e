// The trace-vs-prediction panel in the webview: DOM glue over PanelModel
// (media/panel-model.js). It talks only to the extension, never the network.
(function () {
  'use strict';
  var M = window.PanelModel;
  var vscode = acquireVsCodeApi();
  var state = M.initialState();
  var saved = vscode.getState() || {};

  var summary = document.getElementById('summary');
  var list = document.getElementById('list');
  var spacer = document.getElementById('spacer');
  var windowEl = document.getElementById('window');
  var empty = document.getElementById('empty');

  function save() {
    vscode.setState(M.persistable(state));
  }

  function renderList() {
    var total = state.rows.length;
    var w = M.virtualWindow({ scrollTop: list.scrollTop, viewportHeight: list.clientHeight, rowHeight: M.ROW_HEIGHT, total: total });
    spacer.style.height = w.totalHeight + 'px';
    windowEl.style.transform = 'translateY(' + w.offsetTop + 'px)';
    var html = '';
    for (var i = w.start; i < w.end; i++) html += M.renderRow(state.rows[i], i === state.selected);
    windowEl.innerHTML = html;
    if (state.selected >= 0) list.setAttribute('aria-activedescendant', 'step-' + state.rows[state.selected].step);
  }

  function render() {
    empty.hidden = state.data !== null;
    summary.innerHTML = state.data ? M.renderSummary(state.data) : '';
    renderList();
  }

  function reveal() {
    if (state.selected < 0) return;
    var top = M.scrollToShow(state.selected, list.scrollTop, list.clientHeight, M.ROW_HEIGHT);
    if (top !== list.scrollTop) list.scrollTop = top;
  }

  window.addEventListener('message', function (event) {
    var before = state.data;
    state = M.applyMessage(state, event.data);
    if (event.data && event.data.type === 'data' && !before && saved.runId === state.data.run.runId) {
      // Restored after a reload: put the selection and the scroll back.
      state.selected = Math.min(saved.selected, state.rows.length - 1);
      list.scrollTop = saved.scrollTop || 0;
    }
    render();
    reveal();
    save();
  });

  list.addEventListener('scroll', function () {
    state.scrollTop = list.scrollTop;
    renderList();
    save();
  });

  list.addEventListener('click', function (event) {
    var row = event.target.closest('.row');
    if (!row) return;
    var step = Number(row.getAttribute('data-step'));
    state = M.applyMessage(state, { type: 'selectStep', step: step });
    renderList();
    save();
    vscode.postMessage({ type: 'selectStep', step: step });
  });

  list.addEventListener('keydown', function (event) {
    var pageRows = Math.floor(list.clientHeight / M.ROW_HEIGHT);
    var r = M.handleKey(state, event.key, pageRows);
    if (r.state === state && !r.post) return;
    event.preventDefault();
    state = r.state;
    reveal();
    renderList();
    save();
    if (r.post) vscode.postMessage(r.post);
  });

  document.getElementById('add').addEventListener('click', function () {
    vscode.postMessage({ type: 'addSample' });
  });
  document.getElementById('export').addEventListener('click', function () {
    vscode.postMessage({ type: 'export' });
  });

  vscode.postMessage({ type: 'ready', runId: saved.runId || null });
})();
