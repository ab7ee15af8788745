// The audit view of clawai ui in a real headless Chromium: events written to the trail
// stream in; the server, tool, decision and text filters narrow what is shown and what
// arrives; a click shows the whole event; the counts per server and decision match; the
// line about the hash chain is shown; an event's text (a tool named like an HTML tag) is
// shown as text, never as markup. Then events of a real `clawai proxy` in front of the
// scripted server stream in too.
//
//   node tests/ui/audit.test.mjs        (CLAWAI_BIN=path/to/clawai, default target/debug/clawai;
//                                        CLAWAI_UI_SCREENSHOT=page.png saves what the page showed)
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { chromium } from 'playwright-core';

import { check, cleanups, clawai, homeEnv, onJsonLines, openBrowser, results, run, startUi, withTimeout } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// A real `clawai proxy` in front of the scripted server that denies delete_file and
// allows the rest; resolves once `calls` (tool names) were answered.
async function runProxy(home, audit, calls) {
  const policy = join(home, 'policy.toml');
  writeFileSync(policy, [
    '[[rule]]', 'id = "no-deletes"', 'action = "deny"', 'tool = "delete_file"', '',
    '[[rule]]', 'action = "allow"', 'method = "**"', '',
  ].join('\n'));
  const proxy = spawn(clawai, ['proxy', '--policy', policy, '--audit', audit, '--server', 'scripted', '--',
    'python3', resolve(here, '../e2e/servers/scripted_server.py')], { env: homeEnv(home), stdio: ['pipe', 'pipe', 'inherit'] });
  cleanups.unshift(() => proxy.kill('SIGTERM'));
  const answered = new Set();
  const done = new Promise((resolveDone) => {
    onJsonLines(proxy.stdout, (message) => {
      if (message.id !== undefined) answered.add(message.id);
      if (calls.every((_, i) => answered.has(`call-${i}`))) resolveDone();
    });
  });
  const send = (object) => proxy.stdin.write(JSON.stringify(object) + '\n');
  send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'audit-test', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  calls.forEach((name, i) => send({ jsonrpc: '2.0', id: `call-${i}`, method: 'tools/call', params: { name, arguments: name === 'echo' ? { text: 'hello' } : { path: `/tmp/${name}` } } }));
  await withTimeout(done, 30000, 'the proxy answering the calls');
  proxy.stdin.end();
}

let clock = Date.parse('2026-11-25T10:00:00Z');
function event(server, tool, decision, extra = {}) {
  clock += 1000;
  return {
    time: new Date(clock).toISOString().replace('Z', '123Z'), session: 's1', server, direction: 'client', kind: 'request',
    method: 'tools/call', id: clock % 1000, tool, arguments: {}, decision, rule: `rule-${decision}`, reason: 'r', ...extra,
  };
}

async function main() {
  const home = mkdtempSync(join(tmpdir(), 'clawai-ui-audit-'));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  mkdirSync(join(home, 'state'), { recursive: true });
  const audit = join(home, 'state', 'audit.jsonl');
  const written = [];
  const write = (...events) => {
    written.push(...events);
    appendFileSync(audit, events.map((e) => JSON.stringify(e) + '\n').join(''));
  };
  write(event('fs', 'read_file', 'allow'), event('git', 'git_push', 'deny'));
  const url = await startUi(homeEnv(home), audit);
  const token = new URL(url).searchParams.get('token');

  const { page, pageErrors } = await openBrowser('audit');
  await page.goto(url);
  await page.locator('#status', { hasText: 'live' }).waitFor({ timeout: 15000 });

  const rows = page.locator('#audit-table tbody tr');
  const visibleTools = () => page.$$eval('#audit-table tbody tr:not([hidden]) td.tool', (cells) => cells.map((c) => c.textContent));
  const waitRows = (n) => page.waitForFunction((n) => document.querySelectorAll('#audit-table tbody tr').length === n, n, { timeout: 15000 });

  // 1. The live stream: the trail's events, then new ones as they are written.
  await waitRows(2);
  write(event('fs', 'write_file', 'prompt', { arguments: { path: '/home/u/Secret-Plan.txt', content: 'x' } }),
    event('web', 'fetch', 'audit'));
  await waitRows(4);
  check('events written to the trail appear live', isDeepStrictEqual((await visibleTools()).sort(),
    ['fetch', 'git_push', 'read_file', 'write_file']), JSON.stringify(await visibleTools()));

  // 2. Each filter narrows the rows shown, and applies to events that arrive after it.
  await page.selectOption('#filter-server', 'fs');
  check('the server filter narrows the list', isDeepStrictEqual((await visibleTools()).sort(), ['read_file', 'write_file']),
    JSON.stringify(await visibleTools()));
  write(event('git', 'git_status', 'allow'), event('fs', 'list_dir', 'allow'));
  await waitRows(6);
  check('the server filter applies to events that arrive', isDeepStrictEqual((await visibleTools()).sort(), ['list_dir', 'read_file', 'write_file']),
    JSON.stringify(await visibleTools()));
  const shownLine = await page.locator('#audit-shown').textContent();
  check('the page says how many events the filters show', shownLine === '3 of 6 event(s) shown', shownLine);
  await page.selectOption('#filter-server', '');
  await page.selectOption('#filter-tool', 'git_push');
  check('the tool filter narrows the list', isDeepStrictEqual(await visibleTools(), ['git_push']), JSON.stringify(await visibleTools()));
  await page.selectOption('#filter-tool', '');
  await page.selectOption('#filter-decision', 'deny');
  check('the decision filter narrows the list', isDeepStrictEqual(await visibleTools(), ['git_push']), JSON.stringify(await visibleTools()));
  await page.selectOption('#filter-decision', 'refused');
  write(event('fs', 'exec', 'refused'));
  await waitRows(7);
  check('a decision not seen yet can be chosen, and applies to what arrives', isDeepStrictEqual(await visibleTools(), ['exec']),
    JSON.stringify(await visibleTools()));
  await page.selectOption('#filter-decision', '');
  await page.fill('#filter-text', 'secret-plan');
  check('the text filter matches any field, here an argument value', isDeepStrictEqual(await visibleTools(), ['write_file']),
    JSON.stringify(await visibleTools()));
  await page.fill('#filter-text', 'rule-audit');
  check('the text filter matches the rule', isDeepStrictEqual(await visibleTools(), ['fetch']), JSON.stringify(await visibleTools()));
  await page.fill('#filter-text', '');
  check('clearing the filters shows every event', (await visibleTools()).length === 7, JSON.stringify(await visibleTools()));

  // 3. The detail pane shows the whole event.
  await rows.filter({ hasText: 'write_file' }).click();
  await page.locator('#audit-detail').waitFor({ state: 'visible', timeout: 5000 });
  const detail = await page.locator('#audit-detail-json').textContent();
  let shown = null;
  try { shown = JSON.parse(detail); } catch { /* checked below */ }
  check('a click shows the whole event, as pretty JSON', isDeepStrictEqual(shown, written[2]) && detail.includes('\n  "arguments": {'),
    detail);

  // 4. The counts per server and decision match what was written, and follow new events.
  const countsOnPage = () => page.$$eval('#counts-table tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.dataset.server,
    Object.fromEntries([...tr.querySelectorAll('td[data-decision]')].map((td) => [td.dataset.decision, Number(td.textContent)]))])));
  const expectedCounts = () => {
    const columns = new Set(written.map((e) => e.decision));
    const table = {};
    for (const e of written) {
      table[e.server] ??= Object.fromEntries([...columns].map((d) => [d, 0]));
      table[e.server][e.decision] += 1;
    }
    return table;
  };
  check('the counts per server and decision match', isDeepStrictEqual(await countsOnPage(), expectedCounts()),
    `${JSON.stringify(await countsOnPage())} != ${JSON.stringify(expectedCounts())}`);
  write(event('web', 'fetch', 'deny'));
  await waitRows(8);
  check('the counts update live', isDeepStrictEqual(await countsOnPage(), expectedCounts()),
    `${JSON.stringify(await countsOnPage())} != ${JSON.stringify(expectedCounts())}`);

  // 5. The chain's state: this trail has none yet; once a line carries a chain, the page
  // says how far it checks out (clawai audit verify's verifier), and a broken link names
  // the line.
  const chain = page.locator('#chain-state');
  await page.waitForFunction(() => document.getElementById('chain-state').dataset.state === 'no_chain', null, { timeout: 10000 });
  const chainText = await chain.textContent();
  check('the chain line says the trail has no hash chain yet', /^not verified: the trail has no hash chain yet \(\d+ line\(s\)\)$/.test(chainText), chainText);
  write(event('fs', 'read_file', 'allow', { writer: '0123456789abcdef', seq: 0, prev: '0'.repeat(64) }));
  await waitRows(9);
  await page.waitForFunction(() => document.getElementById('chain-state').dataset.state === 'verified', null, { timeout: 10000 })
    .catch(() => {});
  const chainLater = await chain.textContent();
  check('the chain line follows the trail: a whole chain is verified up to its last event',
    chainLater.startsWith('verified up to event 1;'), chainLater);
  const api = await page.evaluate(async (token) => {
    const without = await fetch('/api/audit/chain');
    const withToken = await fetch('/api/audit/chain', { headers: { Authorization: 'Bearer ' + token } });
    return { without: without.status, body: await withToken.json() };
  }, token);
  check('GET /api/audit/chain needs the token and returns state, checked and first_problem',
    api.without === 401 && api.body.state === 'verified' && api.body.checked === 1 && api.body.first_problem === null, JSON.stringify(api));
  // The writer's next line names a previous line that is not the one before it.
  write(event('fs', 'read_file', 'allow', { writer: '0123456789abcdef', seq: 1, prev: 'f'.repeat(64) }));
  await waitRows(10);
  await page.waitForFunction(() => document.getElementById('chain-state').dataset.state === 'broken', null, { timeout: 10000 })
    .catch(() => {});
  const chainBroken = await chain.textContent();
  check('a broken link is named by its line', /^not verified: line 10 of .*audit\.jsonl: /.test(chainBroken), chainBroken);

  // 6. An event's text is shown as text: a tool named like an HTML tag, markup in an argument.
  const xssTool = '<img src=x onerror="window.__pwned=1">';
  write(event('fs', xssTool, 'deny', { rule: 'markup-rule', arguments: { note: '<script>window.__pwned=2</script><b>bold</b>' } }));
  // Found by its rule: were its tool put in as markup, the row would not have its text.
  const xssRow = rows.filter({ hasText: 'markup-rule' });
  await xssRow.waitFor({ timeout: 15000 });
  const cell = await xssRow.locator('td.tool').textContent();
  const option = await page.$$eval('#filter-tool option', (options) => options.map((o) => o.textContent));
  await xssRow.click();
  await page.waitForFunction(() => document.getElementById('audit-detail-json').textContent.includes('__pwned=2'), null, { timeout: 5000 })
    .catch(() => {});
  const xssDetail = await page.locator('#audit-detail-json').textContent();
  const injected = await page.evaluate(() => ({
    elements: document.querySelectorAll('main img, main script, main b').length,
    pwned: window.__pwned ?? null,
  }));
  check('a tool named like an HTML tag is shown as text, in the row, the filter and the detail',
    cell === xssTool && option.includes(xssTool) && xssDetail.includes(JSON.stringify(xssTool).slice(1, -1))
      && xssDetail.includes('<script>window.__pwned=2</script><b>bold</b>') && injected.elements === 0 && injected.pwned === null,
    JSON.stringify({ cell, injected, xssDetail: xssDetail.slice(0, 300) }));

  // 7. Events of a real proxy in front of the scripted server stream in, and count.
  await runProxy(home, audit, ['echo', 'delete_file']);
  await rows.filter({ hasText: 'delete_file' }).first().waitFor({ timeout: 15000 });
  await page.selectOption('#filter-server', 'scripted');
  const realTools = await page.$$eval('#audit-table tbody tr:not([hidden])', (trs) =>
    trs.map((tr) => `${tr.dataset.tool}:${tr.dataset.decision}`).filter((t) => t.startsWith('echo:') || t.startsWith('delete_file:')));
  const realCounts = (await countsOnPage()).scripted ?? {};
  check("a real proxy's decisions stream in and are counted",
    realTools.includes('delete_file:deny') && realTools.includes('echo:allow') && realCounts.deny >= 1 && realCounts.allow >= 1,
    JSON.stringify({ realTools, realCounts }));

  if (process.env.CLAWAI_UI_SCREENSHOT) await page.screenshot({ path: process.env.CLAWAI_UI_SCREENSHOT, fullPage: true });
  check('the page ran without script errors', pageErrors.length === 0, pageErrors.join('; '));
}

await run(main, 120000);
