"""No false alarms on the servers people run, behind one gateway: every server of the
corpus of real listings (crates/clawai-scan/tests/corpus/, served offline by replay.py
with its captured tools, prompts, templates and instructions) behind one `clawai gateway`,
one of them twice under two names, with pinning and the scan on at their defaults. Every
tool of every server is listed and nothing is held, on the first start and on a second
start over the same pin store."""

import json
import pathlib
import sys

import anyio
import pytest

from conftest import ROOT, read_audit
from gateway_support import all_items, client, gateway_missing, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(gateway_missing() is not None, reason=str(gateway_missing()))]

CORPUS = ROOT / "crates" / "clawai-scan" / "tests" / "corpus"
REPLAY = CORPUS / "replay.py"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def dumps() -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(CORPUS.glob("*.json"))}


def entry(dump_file: pathlib.Path) -> dict:
    return {"command": sys.executable, "args": [str(REPLAY), str(dump_file)], "internalOnly": False}


async def test_every_corpus_server_behind_one_gateway_is_listed_whole(tmp_path):
    corpus = dumps()
    assert len(corpus) >= 25, sorted(corpus)
    servers = {name.replace(".", "-"): entry(CORPUS / f"{name}.json") for name in corpus}
    # The same server under a second name, as two clients' configurations would have it.
    servers["everything-2"] = entry(CORPUS / "everything.json")
    config = write_config(tmp_path / "gateway.json", servers)
    expected = sum(len(d["tools"]) for d in corpus.values()) + len(corpus["everything"]["tools"])
    for start in ("first", "second"):
        with anyio.fail_after(120):
            async with client(tmp_path, config) as c:
                for _ in range(600):
                    tools = await all_items(c)
                    if len([t for t in tools if "__" in t.name and not t.name.startswith("skill__")]) >= expected:
                        break
                    await anyio.sleep(0.2)
                names = {t.name for t in tools}
                for server in servers:
                    dump = corpus[server if server != "everything-2" else "everything"]
                    listed = sum(1 for n in names if n.startswith(f"{server}__"))
                    assert listed == len(dump["tools"]), f"{start} start: {server} lists {listed} of {len(dump['tools'])}"
    held = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("kind") == "pinning" and e.get("decision") == "held"]
    assert held == [], held
