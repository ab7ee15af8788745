// clawai ui, shared helpers: the token, and putting text on the page safely.
// Data from the broker is put on the page only through textContent and created
// elements, never as markup; invisible and direction-changing characters are shown
// as escapes so that what a person approves is what the server will get.
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';

// Control, bidi, zero-width and other invisible characters.
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\ufff9-\ufffb]|[\u{e0000}-\u{e007f}]/gu;

// One style everywhere (the CLI's, the pins diff's, the scan's): \u{202E}.
function escapeCode(ch) {
  return '\\u{' + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '}';
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

// A new element, its text (if any) put in safely.
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) appendSafe(node, String(text));
  return node;
}
