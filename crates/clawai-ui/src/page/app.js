// clawai ui: connects the page to the live stream (pending approvals, audit events),
// and starts the pins view (read on its own, see pins.js).
'use strict';

function connect() {
  const status = document.getElementById('status');
  const stream = new EventSource('/api/stream?token=' + encodeURIComponent(token));
  stream.addEventListener('open', () => {
    status.textContent = 'live';
    auditStreamOpened();
  });
  stream.addEventListener('error', () => {
    status.textContent = token ? 'disconnected, retrying…' : 'no token: open the URL `clawai ui` printed';
  });
  stream.addEventListener('pending', (message) => { renderPending(JSON.parse(message.data)); });
  stream.addEventListener('audit', (message) => addAuditEvent(message.data));
}

setupAuditView();
setupPinsView();
connect();
