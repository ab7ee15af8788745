// clawai ui: the audit view. Events stream in as rows; the filters (server, tool,
// decision, free text) hide the rows that do not match, those shown and those to come;
// a click on a row shows the whole event; counts per server and decision; the state of
// the trail's hash chain. Event text reaches the page only through textContent.
'use strict';

const MAX_AUDIT_ROWS = 1000; // rows kept in the audit table
const DECISIONS = ['allow', 'deny', 'prompt', 'audit', 'pass', 'refused'];
const CHAIN_EVERY_MS = 1500; // the chain's state is asked for at most this often

const audit = {
  counts: new Map(), // server -> Map(decision -> n)
  seen: { server: new Set(), tool: new Set(), decision: new Set(DECISIONS) },
  decisionsCounted: new Set(),
  events: new WeakMap(), // row -> { event, line }
  selected: null, // the row shown in the detail pane
  total: 0,
};

function addOption(select, value) {
  const option = document.createElement('option');
  option.value = value;
  option.textContent = safeText(value);
  select.append(option);
}

// Adds `value` to the filter `kind`'s choices the first time it is seen.
function offer(kind, value) {
  if (!value || audit.seen[kind].has(value)) return;
  audit.seen[kind].add(value);
  addOption(document.getElementById('filter-' + kind), value);
}

function renderCounts() {
  const decided = audit.decisionsCounted;
  const columns = DECISIONS.filter((d) => decided.has(d)).concat([...decided].filter((d) => !DECISIONS.includes(d)).sort());
  const head = document.querySelector('#counts-table thead tr');
  head.replaceChildren(el('th', '', 'server'), ...columns.map((d) => el('th', 'decision-' + d, d)), el('th', '', 'total'));
  const rows = [...audit.counts.keys()].sort().map((server) => {
    const perServer = audit.counts.get(server);
    const tr = el('tr');
    tr.dataset.server = server;
    tr.append(el('td', server ? '' : 'quiet', server || '(none)'));
    let total = 0;
    for (const d of columns) {
      const n = perServer.get(d) || 0;
      total += n;
      const cell = el('td', 'decision-' + d, n);
      cell.dataset.decision = d;
      tr.append(cell);
    }
    tr.append(el('td', 'total', total));
    return tr;
  });
  document.querySelector('#counts-table tbody').replaceChildren(...rows);
}

// The text the free-text filter searches: every value of the event, and the names of
// members below the top level (argument names), lowercased.
function searchText(value, depth = 0, out = []) {
  if (value === null || value === undefined) return out;
  if (typeof value !== 'object') {
    out.push(String(value));
  } else if (Array.isArray(value)) {
    for (const item of value) searchText(item, depth + 1, out);
  } else {
    for (const [key, item] of Object.entries(value)) {
      if (depth > 0) out.push(key);
      searchText(item, depth + 1, out);
    }
  }
  return out;
}

function filterValues() {
  return {
    server: document.getElementById('filter-server').value,
    tool: document.getElementById('filter-tool').value,
    decision: document.getElementById('filter-decision').value,
    text: document.getElementById('filter-text').value.trim().toLowerCase(),
  };
}

function matches(row, filters) {
  return (!filters.server || row.dataset.server === filters.server)
    && (!filters.tool || row.dataset.tool === filters.tool)
    && (!filters.decision || row.dataset.decision === filters.decision)
    && (!filters.text || row.dataset.text.includes(filters.text));
}

function renderShown() {
  const rows = document.querySelectorAll('#audit-table tbody tr');
  const shown = [...rows].filter((row) => !row.hidden).length;
  document.getElementById('audit-shown').textContent = rows.length === shown
    ? `${rows.length} event(s)` : `${shown} of ${rows.length} event(s) shown`;
}

function applyFilters() {
  const filters = filterValues();
  for (const row of document.querySelectorAll('#audit-table tbody tr')) row.hidden = !matches(row, filters);
  renderShown();
}

// One line of pretty JSON, hidden characters shown as escapes; the newlines between
// lines are the layout's own (JSON keeps a string's newlines escaped).
function renderJson(pre, value) {
  const lines = JSON.stringify(value, null, 2).split('\n');
  pre.replaceChildren();
  lines.forEach((line, index) => {
    if (index > 0) pre.append(document.createTextNode('\n'));
    appendSafe(pre, line);
  });
}

function showDetail(row) {
  const item = audit.events.get(row);
  if (!item) return;
  if (audit.selected) audit.selected.classList.remove('selected');
  audit.selected = row;
  row.classList.add('selected');
  const { event } = item;
  const what = [event.time, event.server, row.dataset.tool || event.method, event.decision].filter((v) => typeof v === 'string' && v);
  document.getElementById('audit-detail-title').textContent = safeText(what.join(' · '));
  renderJson(document.getElementById('audit-detail-json'), event);
  document.getElementById('audit-detail').hidden = false;
}

function closeDetail() {
  if (audit.selected) audit.selected.classList.remove('selected');
  audit.selected = null;
  document.getElementById('audit-detail').hidden = true;
}

function addAuditEvent(line) {
  let event;
  try { event = JSON.parse(line); } catch { return; }
  if (!event || typeof event !== 'object' || Array.isArray(event)) return;
  const server = typeof event.server === 'string' ? event.server : '';
  const decision = typeof event.decision === 'string' ? event.decision : '';
  const named = event.tool ?? event.resource ?? event.prompt ?? '';
  const tool = typeof named === 'string' ? named : JSON.stringify(named);
  audit.total += 1;
  if (decision) {
    if (!audit.counts.has(server)) audit.counts.set(server, new Map());
    const perServer = audit.counts.get(server);
    perServer.set(decision, (perServer.get(decision) || 0) + 1);
    audit.decisionsCounted.add(decision);
    renderCounts();
  }
  offer('server', server);
  offer('tool', tool);
  offer('decision', decision);
  const row = el('tr');
  row.tabIndex = 0;
  row.dataset.server = server;
  row.dataset.tool = tool;
  row.dataset.decision = decision;
  row.dataset.text = searchText(event).join('\n').toLowerCase();
  audit.events.set(row, { event, line });
  const time = typeof event.time === 'string' ? event.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
  const method = event.method ?? event.kind ?? '';
  row.append(el('td', '', time), el('td', '', server), el('td', '', typeof method === 'string' ? method : JSON.stringify(method)),
    el('td', 'tool', tool), el('td', 'decision-' + decision, decision), el('td', '', typeof event.rule === 'string' ? event.rule : ''));
  row.hidden = !matches(row, filterValues());
  const body = document.querySelector('#audit-table tbody');
  body.prepend(row);
  while (body.rows.length > MAX_AUDIT_ROWS) {
    if (body.rows[body.rows.length - 1] === audit.selected) closeDetail();
    body.deleteRow(-1);
  }
  renderShown();
  scheduleChain();
}

// Empties the view: a stream that reconnects sends the recent events again.
function resetAuditView() {
  closeDetail();
  document.querySelector('#audit-table tbody').replaceChildren();
  audit.counts.clear();
  audit.decisionsCounted.clear();
  audit.total = 0;
  renderCounts();
  renderShown();
}

let chainTimer = null;
let chainAsked = 0;
function scheduleChain() {
  if (chainTimer) return;
  const wait = Math.max(0, chainAsked + CHAIN_EVERY_MS - Date.now());
  chainTimer = setTimeout(() => { chainTimer = null; refreshChain(); }, wait);
}

async function refreshChain() {
  chainAsked = Date.now();
  const line = document.getElementById('chain-state');
  try {
    const response = await fetch('/api/audit/chain', { headers: { Authorization: 'Bearer ' + token } });
    if (!response.ok) throw new Error(await response.text());
    const chain = await response.json();
    line.className = 'chain chain-' + String(chain.state);
    line.dataset.state = String(chain.state);
    line.dataset.checked = String(chain.checked);
    line.textContent = safeText(chain.summary);
  } catch (error) {
    line.className = 'chain chain-unreadable';
    line.dataset.state = 'unreadable';
    line.textContent = safeText(`not verified: the state of the chain could not be read (${error.message})`);
  }
}

let auditConnected = false;
// Wires the filters and the detail pane; called once the page's scripts are loaded.
function setupAuditView() {
  for (const id of ['filter-server', 'filter-tool', 'filter-decision', 'filter-text']) {
    document.getElementById(id).addEventListener('input', applyFilters);
  }
  for (const decision of DECISIONS) addOption(document.getElementById('filter-decision'), decision);
  const body = document.querySelector('#audit-table tbody');
  body.addEventListener('click', (event) => {
    const row = event.target.closest('tr');
    if (row) showDetail(row);
  });
  body.addEventListener('keydown', (event) => {
    const row = event.target.closest('tr');
    if (row && (event.key === 'Enter' || event.key === ' ')) {
      event.preventDefault();
      showDetail(row);
    }
  });
  document.getElementById('audit-detail-close').addEventListener('click', closeDetail);
}

// The stream (re)opened: a reconnect sends the recent events again, so start afresh.
function auditStreamOpened() {
  if (auditConnected) resetAuditView();
  auditConnected = true;
  refreshChain();
}
