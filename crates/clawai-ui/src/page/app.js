// clawai ui: pending approvals and the live audit trail.
// Data from the broker is put on the page only through textContent and created
// elements, never as markup; invisible and direction-changing characters are shown
// as escapes so that what a person approves is what the server will get.
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
const MAX_SHOWN = 240;       // characters of one value shown before it is cut
const MAX_AUDIT_ROWS = 1000; // rows kept in the audit table

// Control, bidi, zero-width and other invisible characters.
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\ufff9-\ufffb]|[\u{e0000}-\u{e007f}]/gu;

function escapeCode(ch) {
  const cp = ch.codePointAt(0);
  return cp > 0xffff ? '\\u{' + cp.toString(16) + '}' : '\\u' + cp.toString(16).padStart(4, '0');
}

// Appends `text` to `parent`, hidden characters as highlighted escapes.
function appendSafe(parent, text) {
  let last = 0;
  for (const match of text.matchAll(HIDDEN)) {
    if (match.index > last) parent.append(document.createTextNode(text.slice(last, match.index)));
    const mark = document.createElement('span');
    mark.className = 'escape';
    mark.textContent = escapeCode(match[0]);
    parent.append(mark);
    last = match.index + match[0].length;
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
  return parent;
}

// `text` with hidden characters as plain escapes (for cells and options).
function safeText(text) {
  return String(text).replace(HIDDEN, escapeCode);
}

async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text);
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

// A value as shown: strings as they are, the rest as JSON; long ones shown by head and
// tail, with the length and a digest of the whole value so that two long values can be
// told apart.
async function renderValue(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const dd = document.createElement('dd');
  const chars = Array.from(text);
  if (chars.length <= MAX_SHOWN) return appendSafe(dd, text);
  // Head and tail: a payload tends to hide at the end, after padding.
  const head = Math.floor(MAX_SHOWN * 2 / 3);
  const tail = MAX_SHOWN - head;
  appendSafe(dd, chars.slice(0, head).join(''));
  const gap = document.createElement('span');
  gap.className = 'digest';
  gap.textContent = ` … ${chars.length - head - tail} not shown … `;
  dd.append(gap);
  appendSafe(dd, chars.slice(chars.length - tail).join(''));
  const note = document.createElement('span');
  note.className = 'digest';
  note.textContent = ` (${chars.length} characters, SHA-256 ${(await sha256Hex(text)).slice(0, 16)}…)`;
  dd.append(note);
  return dd;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) appendSafe(node, String(text));
  return node;
}

async function api(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
    body: JSON.stringify(body),
  });
  if (response.ok) return null;
  try { return (await response.json()).error; } catch { return `refused (${response.status})`; }
}

async function renderApproval(item) {
  const box = el('article', 'approval' + (item.state === 'expired' ? ' expired' : ''));
  box.dataset.id = item.id;
  box.append(el('div', 'what', `${item.server ?? '(no server name)'} · ${item.name ? item.name : item.method}`));
  const meta = [`id ${item.id}`, item.method, `asked ${item.asked_at}`];
  if (item.rule) meta.push(`rule ${item.rule}`);
  if (item.state === 'expired') meta.push('the call timed out: approving lets its identical retry through once');
  box.append(el('div', 'meta', meta.join(' · ')));
  if (item.description) box.append(el('div', 'description', item.description));
  if (item.reason) box.append(el('div', 'meta', item.reason));
  const list = document.createElement('dl');
  const args = item.arguments && typeof item.arguments === 'object' && !Array.isArray(item.arguments)
    ? Object.entries(item.arguments) : [['arguments', item.arguments]];
  if (args.length === 0) list.append(el('dt', '', '(no arguments)'), document.createElement('dd'));
  for (const [key, value] of args) list.append(el('dt', '', key), await renderValue(value));
  box.append(list);
  const buttons = el('div', 'buttons');
  const error = el('div', 'error');
  const choices = [
    ['Approve once', 'allow', { scope: 'once' }],
    ['Approve for session', 'allow', { scope: 'session' }],
    ['Always', 'allow', { scope: 'always' }],
    ['Deny', 'deny', null],
  ];
  for (const [label, kind, scope] of choices) {
    const button = el('button', kind, label);
    button.type = 'button';
    button.addEventListener('click', async () => {
      for (const b of buttons.querySelectorAll('button')) b.disabled = true;
      const failed = scope
        ? await api('/api/approve', { id: item.id, ...scope })
        : await api('/api/deny', { id: item.id });
      error.textContent = failed ? safeText(failed) : '';
      if (failed) for (const b of buttons.querySelectorAll('button')) b.disabled = false;
    });
    buttons.append(button);
  }
  box.append(buttons, error);
  return box;
}

let renderTurn = 0;
async function renderPending(items) {
  const turn = ++renderTurn;
  const boxes = [];
  for (const item of items) boxes.push(await renderApproval(item));
  if (turn !== renderTurn) return; // a newer list arrived meanwhile
  document.getElementById('pending-list').replaceChildren(...boxes);
  document.getElementById('no-pending').hidden = items.length > 0;
  document.getElementById('pending-count').textContent = items.length ? `(${items.length})` : '';
  document.title = items.length ? `(${items.length}) clawai: approvals and audit` : 'clawai: approvals and audit';
}

// Audit: rows, filters and counts.
const DECISIONS = ['allow', 'deny', 'prompt', 'audit', 'pass', 'refused'];
const counts = new Map(); // server -> Map(decision -> n)
const servers = new Set();
const decisions = new Set();

function addOption(select, value) {
  const option = document.createElement('option');
  option.value = value;
  option.textContent = safeText(value);
  select.append(option);
}

function renderCounts() {
  const seen = DECISIONS.filter((d) => decisions.has(d)).concat([...decisions].filter((d) => !DECISIONS.includes(d)));
  const head = document.querySelector('#counts-table thead tr');
  head.replaceChildren(el('th', '', 'server'), ...seen.map((d) => el('th', 'decision-' + d, d)));
  const rows = [...counts.keys()].sort().map((server) => {
    const tr = el('tr');
    tr.append(el('td', '', server));
    for (const d of seen) tr.append(el('td', 'decision-' + d, counts.get(server).get(d) || 0));
    return tr;
  });
  document.querySelector('#counts-table tbody').replaceChildren(...rows);
}

function matchesFilters(row) {
  const server = document.getElementById('filter-server').value;
  const decision = document.getElementById('filter-decision').value;
  const text = document.getElementById('filter-text').value.toLowerCase();
  return (!server || row.dataset.server === server)
    && (!decision || row.dataset.decision === decision)
    && (!text || row.dataset.text.toLowerCase().includes(text));
}

function applyFilters() {
  for (const row of document.querySelectorAll('#audit-table tbody tr')) row.hidden = !matchesFilters(row);
}

function addAuditEvent(line) {
  let event;
  try { event = JSON.parse(line); } catch { return; }
  if (!event || typeof event !== 'object') return;
  const server = typeof event.server === 'string' ? event.server : '';
  const decision = typeof event.decision === 'string' ? event.decision : '';
  const tool = event.tool ?? event.resource ?? event.prompt ?? '';
  if (decision) {
    if (!counts.has(server)) counts.set(server, new Map());
    const perServer = counts.get(server);
    perServer.set(decision, (perServer.get(decision) || 0) + 1);
    if (!decisions.has(decision)) { decisions.add(decision); addOption(document.getElementById('filter-decision'), decision); }
    renderCounts();
  }
  if (server && !servers.has(server)) { servers.add(server); addOption(document.getElementById('filter-server'), server); }
  const row = el('tr');
  row.dataset.server = server;
  row.dataset.decision = decision;
  row.dataset.text = line;
  const time = typeof event.time === 'string' ? event.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
  row.append(el('td', '', time), el('td', '', server), el('td', '', event.method ?? event.kind ?? ''),
    el('td', '', typeof tool === 'string' ? tool : JSON.stringify(tool)), el('td', 'decision-' + decision, decision),
    el('td', '', event.rule ?? ''));
  row.hidden = !matchesFilters(row);
  const body = document.querySelector('#audit-table tbody');
  body.prepend(row);
  while (body.rows.length > MAX_AUDIT_ROWS) body.deleteRow(-1);
}

function connect() {
  const status = document.getElementById('status');
  const stream = new EventSource('/api/stream?token=' + encodeURIComponent(token));
  stream.addEventListener('open', () => { status.textContent = 'live'; });
  stream.addEventListener('error', () => {
    status.textContent = token ? 'disconnected, retrying…' : 'no token: open the URL `clawai ui` printed';
  });
  stream.addEventListener('pending', (message) => { renderPending(JSON.parse(message.data)); });
  stream.addEventListener('audit', (message) => addAuditEvent(message.data));
}

for (const id of ['filter-server', 'filter-decision', 'filter-text']) {
  document.getElementById(id).addEventListener('input', applyFilters);
}
connect();
