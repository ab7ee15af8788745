// clawai ui: the pinned tools. Every server's pinned tools, prompts, resource templates
// and instructions, those held (changed, added, quarantined) first; a click shows the
// review of one: the diff of the approved and the live version (invisible characters
// escaped, flipped annotations marked), the scan's findings, and an Approve button that
// sends the hash of the version shown, so that a version that changed again after it
// was shown is refused, never approved unseen. Server text reaches the page only
// through textContent (el, appendSafe).
'use strict';

const PINS_EVERY_MS = 2000; // how often the list is read again

const pinView = {
  selected: null, // { server, kind, name } of the item in the review pane
  shown: null, // the review shown (its hashes), as the API gave it
  rows: [], // the list, as last read
};

function pinKey(item) {
  return JSON.stringify([item.server, item.kind, item.name]);
}

async function getPinsJson(path) {
  const response = await fetch(path, { headers: { Authorization: 'Bearer ' + token } });
  let body = null;
  try { body = await response.json(); } catch { /* not JSON: a refusal in plain text */ }
  if (!response.ok) throw new Error(body && body.error ? body.error : `refused (${response.status})`);
  return body;
}

function shortHash(hash) {
  return typeof hash === 'string' ? hash.slice(0, 12) : '-';
}

function worstFinding(findings) {
  return Array.isArray(findings) && findings.length ? findings[0] : null;
}

function renderPinRows(listed) {
  // Held items first, then the store's order (by server, kind and name).
  const items = listed.items.map((item, index) => ({ item, index }))
    .sort((a, b) => (b.item.held - a.item.held) || (a.index - b.index))
    .map(({ item }) => item);
  pinView.rows = items;
  const held = items.filter((item) => item.held).length;
  document.getElementById('pins-held-count').textContent = held ? `(${held} held)` : '';
  document.getElementById('pins-summary').textContent = safeText(items.length
    ? `${items.length} item(s) pinned in ${listed.dir}; ${held} held until you approve them`
    : `nothing pinned yet in ${listed.dir} (servers are pinned the first time a proxy lists them)`);
  const selected = pinView.selected && pinKey(pinView.selected);
  const rows = items.map((item) => {
    const tr = el('tr', item.held ? 'held' : '');
    tr.tabIndex = 0;
    tr.dataset.key = pinKey(item);
    tr.dataset.server = item.server;
    tr.dataset.kind = item.kind;
    tr.dataset.name = item.name;
    tr.dataset.state = item.state;
    tr.dataset.held = String(Boolean(item.held));
    if (tr.dataset.key === selected) tr.classList.add('selected');
    const worst = worstFinding(item.findings);
    const found = worst ? `${item.findings.length}: ${worst.severity} ${worst.class}` : '';
    tr.append(el('td', '', item.server), el('td', '', item.kind), el('td', 'name', item.name),
      el('td', 'state state-' + String(item.state).split(' ')[0], (item.held ? '⚠ ' : '') + item.state),
      el('td', worst ? 'severity-' + worst.severity : 'quiet', found),
      el('td', 'hash', shortHash(item.live_hash ?? item.hash)));
    return tr;
  });
  document.querySelector('#pins-table tbody').replaceChildren(...rows);
  noticeChange();
}

// The item shown changed since (another version waits, or it was approved elsewhere):
// say so; the Approve button keeps the hash of what is shown.
function noticeChange() {
  const notice = document.getElementById('pins-changed');
  const shown = pinView.shown;
  if (!shown) { notice.hidden = true; return; }
  const now = pinView.rows.find((item) => pinKey(item) === pinKey(shown));
  const changed = !now || now.live_hash !== (shown.live ? shown.live.hash : null) || now.state !== shown.state;
  notice.hidden = !changed;
}

async function refreshPins() {
  try {
    renderPinRows(await getPinsJson('/api/pins'));
    document.getElementById('pins-list-error').textContent = '';
  } catch (error) {
    document.getElementById('pins-list-error').textContent = safeText(`the pins could not be read: ${error.message}`);
  }
}

function diffLineClass(line) {
  if (line.startsWith('---') || line.startsWith('+++')) return 'diff-head';
  if (line.startsWith('!')) return 'diff-flag';
  if (line.startsWith('+')) return 'diff-add';
  if (line.startsWith('-')) return 'diff-del';
  return 'diff-same';
}

function renderDiff(pre, text) {
  pre.replaceChildren();
  for (const line of String(text).split('\n')) {
    if (line === '') continue;
    pre.append(el('span', diffLineClass(line), line), document.createTextNode('\n'));
  }
}

function renderFindings(list, findings) {
  list.replaceChildren(...(findings || []).map((f) => {
    const li = el('li', 'severity-' + f.severity);
    li.dataset.class = f.class;
    li.dataset.severity = f.severity;
    li.append(el('strong', '', `${f.severity} ${f.class}`), el('span', 'quiet', f.field ? ` in ${f.field}: ` : ': '),
      el('span', 'evidence', f.evidence));
    if (f.detail) li.append(el('div', 'quiet', f.detail));
    return li;
  }));
  list.hidden = !findings || findings.length === 0;
}

function renderReview(shown) {
  pinView.shown = shown;
  document.getElementById('pins-detail-title').textContent = safeText(`${shown.server} · ${shown.kind} · ${shown.name}`);
  const state = document.getElementById('pins-detail-state');
  state.dataset.state = shown.state;
  const why = [];
  if (shown.quarantined_by) why.push(`quarantined: the scan found ${shown.quarantined_by.class} (${shown.quarantined_by.severity}); approve it only if that text is meant to be there`);
  if (shown.held_on_sight) why.push('held when it was first seen: never approved');
  if (!shown.approve_hash) why.push('nothing waits for approval: the approved version is shown');
  state.textContent = safeText([shown.state, ...why].join(' · '));
  const hashes = document.getElementById('pins-detail-hashes');
  const pair = (label, version) => [el('dt', '', label),
    el('dd', 'hash', version ? `${version.hash} (seen ${version.seen})` : '(none)')];
  hashes.replaceChildren(...pair('approved', shown.pinned), ...pair('live', shown.live));
  renderFindings(document.getElementById('pins-findings'), shown.findings);
  renderDiff(document.getElementById('pins-diff'), shown.text);
  const button = document.getElementById('pins-approve');
  button.hidden = !shown.approve_hash;
  button.disabled = !shown.approve_hash;
  button.dataset.hash = shown.approve_hash || '';
  button.textContent = shown.approve_hash ? `Approve this version (${shortHash(shown.approve_hash)}…)` : 'Approve';
  document.getElementById('pins-detail').hidden = false;
  noticeChange();
}

async function showPin(item) {
  pinView.selected = { server: item.server, kind: item.kind, name: item.name };
  for (const tr of document.querySelectorAll('#pins-table tbody tr')) {
    tr.classList.toggle('selected', tr.dataset.key === pinKey(item));
  }
  document.getElementById('pins-error').textContent = '';
  document.getElementById('pins-result').textContent = '';
  const query = new URLSearchParams({ server: item.server, kind: item.kind, name: item.name });
  try {
    const shown = await getPinsJson('/api/pins/diff?' + query);
    if (pinView.selected && pinKey(pinView.selected) === pinKey(item)) renderReview(shown);
  } catch (error) {
    document.getElementById('pins-error').textContent = safeText(error.message);
  }
}

async function approveShown() {
  const shown = pinView.shown;
  const button = document.getElementById('pins-approve');
  if (!shown || !button.dataset.hash) return;
  button.disabled = true;
  const error = document.getElementById('pins-error');
  const result = document.getElementById('pins-result');
  error.textContent = '';
  result.textContent = '';
  let answer = null;
  let failure = null;
  try {
    const response = await fetch('/api/pins/approve', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
      body: JSON.stringify({ server: shown.server, kind: shown.kind, name: shown.name, hash: button.dataset.hash }),
    });
    try { answer = await response.json(); } catch { answer = null; }
    if (!response.ok) failure = answer && answer.error ? answer.error : `refused (${response.status})`;
  } catch (e) {
    failure = e.message;
  }
  await refreshPins();
  if (failure) {
    // Shown after the review is read again, so that the message stays with the
    // version the server lists now.
    await showPin(shown);
    error.textContent = safeText(failure);
    return;
  }
  await showPin(shown);
  result.textContent = safeText(`approved ${shown.kind} ${shown.name} of ${shown.server}; running proxies pass it on from now on`);
}

function closePin() {
  pinView.selected = null;
  pinView.shown = null;
  for (const tr of document.querySelectorAll('#pins-table tbody tr.selected')) tr.classList.remove('selected');
  document.getElementById('pins-detail').hidden = true;
}

// Wires the pins view and starts reading the list; called once the scripts are loaded.
function setupPinsView() {
  const body = document.querySelector('#pins-table tbody');
  const pick = (row) => {
    const item = pinView.rows.find((i) => pinKey(i) === row.dataset.key);
    if (item) showPin(item);
  };
  body.addEventListener('click', (event) => {
    const row = event.target.closest('tr');
    if (row) pick(row);
  });
  body.addEventListener('keydown', (event) => {
    const row = event.target.closest('tr');
    if (row && (event.key === 'Enter' || event.key === ' ')) {
      event.preventDefault();
      pick(row);
    }
  });
  document.getElementById('pins-approve').addEventListener('click', approveShown);
  document.getElementById('pins-detail-close').addEventListener('click', closePin);
  document.getElementById('pins-reload').addEventListener('click', () => { if (pinView.shown) showPin(pinView.shown); });
  refreshPins();
  setInterval(refreshPins, PINS_EVERY_MS);
}
