#!/usr/bin/env python3
"""Dump the listings of real MCP servers into this folder, for the scanner's false-positive corpus.

Usage: dump.py NODE_PROJECT_DIR [--venv VENV_DIR]... [NAME...]

  NODE_PROJECT_DIR  a folder where the npm packages named in SERVERS were installed with
                    `npm install PACKAGE...` (their bins are run from node_modules/.bin).
  --venv VENV_DIR   a Python virtual environment where PyPI distributions named in
                    PYPI_SERVERS were installed with `VENV_DIR/bin/pip install DIST...`;
                    each console script is run from the first VENV_DIR/bin that has it.
                    Repeat it for servers that need their own venv (mcp-server-sqlite needs
                    the mcp 1.x SDK, the newer reference servers mcp 2.x). Without it the
                    PyPI servers are skipped.
  NAME...           dump only these servers (default: every server that can be run).

Each server is started over stdio with HOME set to a fresh temporary folder, initialized,
and every page of tools/list, prompts/list and resources/templates/list (following
nextCursor) is written to NAME.json together with the package's name@version, the server's
instructions, and the initialize result's serverInfo and capabilities. Requests the server
sends (roots/list, sampling, ...) are refused. The files are committed so the tests run
offline; rerun this to refresh them, e.g.:

  mkdir -p /tmp/capture && cd /tmp/capture && npm init -y
  npm install @modelcontextprotocol/server-everything @anthropic-ai/claude-code ...
  python3 -m venv venv && venv/bin/pip install mcp-server-fetch mcp-server-git mcp-server-time
  python3 -m venv venv1 && venv1/bin/pip install mcp-server-sqlite 'mcp<2'
  python3 dump.py /tmp/capture --venv venv --venv venv1 everything claude-code fetch sqlite
"""
import json
import os
import select
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (npm package, bin, extra args, extra env). Only servers that start and list
# without credentials or a live backend; dummy values stand in where a server reads one
# at start but contacts nothing to list. "{tmp}" in args and env is the server's fresh
# temporary folder (also its HOME).
SERVERS = {
    "filesystem": ("@modelcontextprotocol/server-filesystem", "mcp-server-filesystem", ["{tmp}"], {}),
    "memory": ("@modelcontextprotocol/server-memory", "mcp-server-memory", [], {"MEMORY_FILE_PATH": "{tmp}/memory.json"}),
    "everything": ("@modelcontextprotocol/server-everything", "mcp-server-everything", [], {}),
    "sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", "mcp-server-sequential-thinking", [], {}),
    "github": ("@modelcontextprotocol/server-github", "mcp-server-github", [], {}),
    "gitlab": ("@modelcontextprotocol/server-gitlab", "mcp-server-gitlab", [], {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "postgres": ("@modelcontextprotocol/server-postgres", "mcp-server-postgres", ["postgresql://localhost:1/none"], {}),
    "puppeteer": ("@modelcontextprotocol/server-puppeteer", "mcp-server-puppeteer", [], {}),
    "pdf": ("@modelcontextprotocol/server-pdf", "mcp-pdf-server", ["--stdio"], {}),
    "slack": ("@modelcontextprotocol/server-slack", "mcp-server-slack", [], {"SLACK_BOT_TOKEN": "dummy", "SLACK_TEAM_ID": "dummy"}),
    "brave-search": ("@modelcontextprotocol/server-brave-search", "mcp-server-brave-search", [], {"BRAVE_API_KEY": "dummy"}),
    "playwright": ("@playwright/mcp", "playwright-mcp", [], {}),
    "context7": ("@upstash/context7-mcp", "context7-mcp", [], {}),
    "notion": ("@notionhq/notion-mcp-server", "notion-mcp-server", [], {}),
    "chrome-devtools": ("chrome-devtools-mcp", "chrome-devtools-mcp", [], {}),
    "desktop-commander": ("@wonderwhy-er/desktop-commander", "desktop-commander", [], {}),
    "kubernetes": ("mcp-server-kubernetes", "mcp-server-kubernetes", [], {}),
    # Claude Code's own server; it runs offline and asks the client for roots/list.
    "claude-code": ("@anthropic-ai/claude-code", "claude", ["mcp", "serve"], {}),
    # With stdin piped, `mcp start` serves stdio.
    "claude-flow": ("@claude-flow/cli", "claude-flow", ["mcp", "start"], {}),
    "sentry": ("@sentry/mcp-server", "sentry-mcp", ["--access-token=dummy"], {}),
    # @stripe/mcp 0.3 only forwards to Stripe's remote server: install @stripe/mcp@0.2.5,
    # the last one with the tools inside.
    "stripe": ("@stripe/mcp", "mcp", ["--tools=all", "--api-key=sk_test_dummy"], {}),
    # Every feature group but "docs", whose tool is built from a schema fetched at listing.
    "supabase": ("@supabase/mcp-server-supabase", "mcp-server-supabase",
                 ["--access-token", "dummy", "--features", "account,database,debugging,development,functions,branching,storage"], {}),
    "firecrawl": ("firecrawl-mcp", "firecrawl-mcp", [], {"FIRECRAWL_API_KEY": "fc-dummy"}),
    "exa": ("exa-mcp-server", "exa-mcp-server", [], {"EXA_API_KEY": "dummy"}),
    "tavily": ("tavily-mcp", "tavily-mcp", [], {"TAVILY_API_KEY": "tvly-dummy"}),
    "browserbase": ("@browserbasehq/mcp-server-browserbase", "mcp-server-browserbase", [],
                    {"BROWSERBASE_API_KEY": "dummy", "BROWSERBASE_PROJECT_ID": "dummy", "GEMINI_API_KEY": "dummy"}),
    "google-maps": ("@modelcontextprotocol/server-google-maps", "mcp-server-google-maps", [], {"GOOGLE_MAPS_API_KEY": "dummy"}),
    "everart": ("@modelcontextprotocol/server-everart", "mcp-server-everart", [], {"EVERART_API_KEY": "dummy"}),
    "figma": ("figma-developer-mcp", "figma-developer-mcp", ["--stdio", "--figma-api-key=dummy"], {}),
    "cloudflare": ("@cloudflare/mcp-server-cloudflare", "mcp-server-cloudflare", ["run", "dummy-account"], {"CLOUDFLARE_API_TOKEN": "dummy"}),
    # Every tool on its own ("all" mode) rather than one router tool per service namespace.
    "azure": ("@azure/mcp", "azmcp", ["server", "start", "--mode", "all"], {"AZURE_MCP_COLLECT_TELEMETRY": "false"}),
}
# Not dumped: @heroku/mcp-server 1.2.8 fails to start (it imports
# "@modelcontextprotocol/sdk/server/mcp" without ".js", which Node's ESM loader rejects);
# @modelcontextprotocol/server-redis needs a live Redis (it exits after 5 failed connects).

# name -> (PyPI distribution, console script, extra args, extra env), run from the venv.
# "{repo}" in args is a fresh empty git repository inside the server's temporary folder.
PYPI_SERVERS = {
    "fetch": ("mcp-server-fetch", "mcp-server-fetch", [], {}),
    "git": ("mcp-server-git", "mcp-server-git", ["--repository", "{repo}"], {}),
    "time": ("mcp-server-time", "mcp-server-time", ["--local-timezone", "UTC"], {}),
    "sqlite": ("mcp-server-sqlite", "mcp-server-sqlite", ["--db-path", "{tmp}/test.db"], {}),
}


class Peer:
    def __init__(self, argv, env, cwd):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.buf = b""
        self.next_id = 1

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout=60):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            while b"\n" not in self.buf:
                ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
                if not ready:
                    raise TimeoutError(method)
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError(method)
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a server that logs to stdout
            if not isinstance(msg, dict):
                continue
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg:  # a request of the server's: refuse it
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not supported"}})

    def list_all(self, method, key):
        items, cursor = [], None
        for _ in range(1000):
            reply = self.request(method, {"cursor": cursor} if cursor else {})
            if "error" in reply:
                return items
            items += reply["result"].get(key, [])
            cursor = reply["result"].get("nextCursor")
            if not cursor:
                return items
        return items

    def close(self):
        self.proc.kill()
        self.proc.wait()


def npm_version(root, package):
    with open(os.path.join(root, "node_modules", package, "package.json")) as f:
        return json.load(f)["version"]


def find_script(venvs, script):
    for venv in venvs:
        if os.path.exists(os.path.join(venv, "bin", script)):
            return venv
    return None


def pypi_version(venv, dist):
    python = os.path.join(venv, "bin", "python")
    return subprocess.check_output(
        [python, "-c", "import importlib.metadata, sys; print(importlib.metadata.version(sys.argv[1]))", dist],
        text=True).strip()


def dump(name, package, version, argv, extra_env):
    tmp = tempfile.mkdtemp(prefix="scan-corpus-")
    repo = os.path.join(tmp, "repo")
    if any("{repo}" in a for a in argv):
        subprocess.run(["git", "init", "-q", repo], check=True)
    fill = {"tmp": tmp, "repo": repo}
    env = dict(os.environ, HOME=tmp, **{k: v.format(**fill) for k, v in extra_env.items()})
    peer = Peer([a.format(**fill) for a in argv], env, tmp)
    try:
        init = peer.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "clawai-scan-corpus", "version": "0"}})
        if "error" in init:
            raise RuntimeError(f"initialize: {init['error']}")
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result = init["result"]
        out = {
            "server": name,
            "package": f"{package}@{version}",
            "serverInfo": result.get("serverInfo"),
            "capabilities": result.get("capabilities"),
            "instructions": result.get("instructions"),
            "tools": peer.list_all("tools/list", "tools"),
            "prompts": peer.list_all("prompts/list", "prompts"),
            "resourceTemplates": peer.list_all("resources/templates/list", "resourceTemplates"),
        }
    finally:
        peer.close()
    with open(os.path.join(HERE, f"{name}.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return f"{len(out['tools'])} tools, {len(out['prompts'])} prompts, {len(out['resourceTemplates'])} templates"


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    root = os.path.abspath(args.pop(0))
    venvs = []
    while "--venv" in args:
        i = args.index("--venv")
        venvs.append(os.path.abspath(args[i + 1]))
        del args[i:i + 2]
    wanted = set(args)
    unknown = wanted - set(SERVERS) - set(PYPI_SERVERS)
    if unknown:
        print(f"unknown servers: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    jobs = []
    for name, (package, bin_name, extra, env) in SERVERS.items():
        if not wanted or name in wanted:
            jobs.append((name, package, lambda p=package: npm_version(root, p),
                         [os.path.join(root, "node_modules", ".bin", bin_name)] + extra, env))
    for name, (dist, script, extra, env) in PYPI_SERVERS.items():
        if (not wanted and venvs) or name in wanted:
            venv = find_script(venvs, script)
            if not venv:
                print(f"{name}: skipped: no --venv has {script}", file=sys.stderr)
                continue
            jobs.append((name, dist, lambda d=dist: pypi_version(venv, d),
                         [os.path.join(venv, "bin", script)] + extra, env))
    failed = 0
    for name, package, version, argv, env in jobs:
        try:
            print(f"{name}: {dump(name, package, version(), argv, env)}")
        except Exception as e:  # noqa: BLE001 - report and go on with the others
            failed += 1
            print(f"{name}: failed: {e!r}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
