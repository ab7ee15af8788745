"""`clawai status` with a gateway running: the gateway's servers, each with its state (up,
starting, failed), the tools it lists and those pinning holds; gone once the gateway stops."""

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import clawai_bin
from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, own_state, scripted, write_config

_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def status(tmp_path) -> str:
    out = subprocess.run([clawai_bin(), "status"], capture_output=True, text=True, timeout=30, cwd=tmp_path,
                         env=own_state(tmp_path, {**os.environ, "HOME": str(tmp_path / "home")}))
    assert out.returncode == 0, out
    return out.stdout


def test_status_lists_a_running_gateways_servers_their_state_and_tools(tmp_path):
    (tmp_path / "home").mkdir()
    failing = {"command": sys.executable, "args": ["-c", "import sys; print('no such module', file=sys.stderr); sys.exit(1)"]}
    config = write_config(tmp_path / "gateway.json", {
        "m": scripted("m", "--mutable"),
        "bad": failing,
        "slow": scripted("slow", "--slow-start", 600),
    })
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("m__echo", "m__mutate"), timeout=10)
        # A rug pull: `echo` changes under its first listing and is held until reviewed.
        answer = gw.request("pull", "tools/call", {"name": "m__mutate", "arguments": {"tool": "echo"}})
        assert "changed echo" in json_text(answer), answer
        gw.wait_listed(lambda names: "m__echo" not in names and "m__whoami" in names, timeout=10)
        deadline = time.monotonic() + 15
        while True:
            text = status(tmp_path)
            if "1 held" in text and "bad: failed" in text:
                break
            assert time.monotonic() < deadline, text
            time.sleep(0.3)
        header = re.search(rf"^clawai gateway \(pid {gw.proc.pid}, stdio\) — .*gateway\.json$", text, re.M)
        assert header, text
        assert "\n  m: up, 10 tools listed, 1 held by pinning\n" in text, text
        assert "\n  bad: failed, 0 tools listed, internal\n    " in text, text
        assert "no such module" in text
        assert "\n  slow: starting, 0 tools listed\n" in text, text
    finally:
        gw.close()
        gw.kill()
    assert "clawai gateway (pid" not in status(tmp_path), "a stopped gateway is not listed"


def json_text(answer: dict) -> str:
    return " ".join(item.get("text", "") for item in answer.get("result", {}).get("content", []))
