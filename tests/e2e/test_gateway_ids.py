"""Request ids through `clawai gateway` come back byte for byte, whatever JSON number the
client wrote: integers beyond 64 bits, exponents, trailing zeros (a parser would make them
floats), alongside strings and 0."""

import re

import pytest

from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, scripted, write_config

_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def exchange(gw: RawGateway, raw_id: str, method: str, params: str) -> bytes:
    line = f'{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}","params":{params}}}\n'.encode()
    gw.proc.stdin.write(line)
    gw.proc.stdin.flush()
    while True:
        answer = gw.lines.get(timeout=10)
        assert answer, b"".join(gw.stderr).decode()[-2000:]
        if b'"method"' not in answer.split(b'"result"')[0].split(b'"error"')[0]:
            return answer


@pytest.mark.parametrize("raw_id", ["123456789012345678901234567890", "-98765432109876543210987", "1e3", "2.50",
                                    "0", '"s-1"', "18446744073709551615"])
def test_every_id_comes_back_as_the_client_wrote_it(tmp_path, raw_id):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo"), timeout=10)
        for method, params in [("tools/call", '{"name":"a__echo","arguments":{"text":"hi"}}'), ("tools/list", "{}"),
                               ("ping", "{}")]:
            answer = exchange(gw, raw_id, method, params)
            assert re.search(rb'"id":' + re.escape(raw_id.encode()) + rb"[,}]", answer), (method, answer[:200])
            assert b'"result"' in answer, answer[:300]
    finally:
        gw.kill()
