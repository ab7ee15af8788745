// clawai ui: pending approvals, each with its arguments and the answers to give.
'use strict';

const MAX_SHOWN = 240; // characters of one value shown before it is cut

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
  // What "Always" writes to approvals.toml, shown before it is chosen.
  if (item.always) {
    box.append(el('div', 'meta', 'Always writes (the arguments shown; "Always, any arguments" leaves them out):'));
    box.append(el('pre', 'always-rule', safeText(item.always)));
  }
  const buttons = el('div', 'buttons');
  const error = el('div', 'error');
  const choices = [
    ['Approve once', 'allow', { scope: 'once' }],
    ['Approve for session', 'allow', { scope: 'session' }],
    ['Always', 'allow', { scope: 'always' }],
    ['Always, any arguments', 'allow', { scope: 'always_any_arguments' }],
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
