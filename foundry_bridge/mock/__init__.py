"""An offline Foundry: the evaluation API emulated in-process (respx / httpx.MockTransport) and on loopback.

    emu = FoundryEmulator(polls_to_complete=2, faults=FaultConfig(rate_limit_every=5))
    client = httpx.Client(transport=emu.transport())   # in-process, any host
    with serve(emu) as server:                          # loopback, for the openai SDK (httpx2)
        openai.OpenAI(base_url=server.openai_base_url, api_key="x")

See docs/mock.md.
"""

from __future__ import annotations

from ._emulator import PROJECT_ENDPOINT, FoundryEmulator, Store
from ._faults import FaultConfig, parse_faults
from ._graders import stand_in_cuts
from ._scoring import overlap, tokens
from ._server import MockServer, serve

__all__ = [
    "PROJECT_ENDPOINT",
    "FaultConfig",
    "FoundryEmulator",
    "MockServer",
    "Store",
    "overlap",
    "parse_faults",
    "serve",
    "stand_in_cuts",
    "tokens",
]
