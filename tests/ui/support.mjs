// What the browser tests of clawai ui share: the binary under test, the tally of checks,
// a time limit, a fresh home for each test's processes, `clawai ui` started in it, and
// the end of a run (clean up, print the tally, exit non-zero on a failure).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));

/** The clawai binary under test: CLAWAI_BIN, else target/debug/clawai. */
export const clawai = process.env.CLAWAI_BIN || resolve(here, '../../target/debug/clawai');

/** The checks passed and failed so far. */
export const results = { passed: 0, failed: 0 };

/** What to undo when the test ends (processes to stop, directories to remove). */
export const cleanups = [];

/** Records one check, printing `ok` or `FAIL` with its name. */
export function check(name, ok, detail = '') {
  if (ok) {
    results.passed += 1;
    console.log(`ok   ${name}`);
  } else {
    results.failed += 1;
    console.log(`FAIL ${name} ${detail}`);
  }
}

/** `promise`, or an error naming `what` after `ms` milliseconds. */
// Calls `handler` with each JSON line `stream` sends (a proxy's stdout, the broker's
// socket), parsed; blank lines are skipped.
export function onJsonLines(stream, handler) {
  let buffer = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buffer += chunk;
    let at;
    while ((at = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, at).trim();
      buffer = buffer.slice(at + 1);
      if (text) handler(JSON.parse(text));
    }
  });
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

/** An environment whose home and XDG directories are `home`: no broker, approvals,
 * trail or policy of the user's answers for the test. `extra` is added last. */
export function homeEnv(home, extra = {}) {
  const env = {
    ...process.env,
    HOME: home,
    XDG_RUNTIME_DIR: join(home, 'run'),
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CONFIG_HOME: join(home, 'config'),
  };
  for (const name of ['CLAWAI_BROKER_SOCKET', 'CLAWAI_APPROVALS', 'CLAWAI_AUDIT', 'CLAWAI_POLICY', 'CLAWAI_GRANT_WINDOW_MS']) {
    delete env[name];
  }
  return { ...env, ...extra };
}

/** Starts `clawai ui` on a free loopback port, reading `audit`, in `env`; resolves with
 * the URL it prints. */
export function startUi(env, audit) {
  const ui = spawn(clawai, ['ui', '--listen', '127.0.0.1:0', '--audit', audit], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(() => ui.kill('SIGTERM'));
  return withTimeout(new Promise((resolveUrl, reject) => {
    let out = '';
    ui.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolveUrl(out.split('\n')[0].trim());
    });
    ui.on('exit', (code) => reject(new Error(`clawai ui exited (${code}) before printing its URL`)));
  }), 20000, 'clawai ui printing its URL');
}

/** Runs `main` within `ms`, cleans up, prints the tally and exits: 0 only when every
 * check passed and nothing crashed. */
export async function run(main, ms) {
  let crashed = null;
  try {
    await withTimeout(main(), ms, 'the whole test');
  } catch (error) {
    crashed = error;
    console.log(`FAIL ${error.stack || error}`);
    results.failed += 1;
  }
  for (const cleanup of cleanups) {
    try { await cleanup(); } catch { /* already gone */ }
  }
  console.log(`${results.passed} passed, ${results.failed} failed`);
  process.exit(results.failed === 0 && !crashed ? 0 : 1);
}

/** Debian's Chromium, headless, with a fresh profile (removed at the end); resolves with
 * its context, its page and the script errors the page throws. */
export async function openBrowser(name) {
  const userDataDir = mkdtempSync(join(tmpdir(), `clawai-ui-${name}-chromium-`));
  cleanups.push(() => rmSync(userDataDir, { recursive: true, force: true }));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-gpu', '--no-first-run',
      '--disable-component-update', '--disable-sync'],
  });
  cleanups.unshift(() => context.close());
  const page = context.pages()[0] ?? await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  // A page resource the browser asks for and does not get (a 404 in the console, such
  // as /favicon.ico) counts too; the API's refusals are what some checks provoke.
  page.on('response', (response) => {
    const path = new URL(response.url()).pathname;
    if (response.status() >= 400 && !path.startsWith('/api/')) pageErrors.push(`${response.status()} for ${path}`);
  });
  return { context, page, pageErrors };
}
