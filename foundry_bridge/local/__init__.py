"""Local judges: run a plan's evaluators on this machine, with a disk cache of judge answers.

``LocalBackend`` implements ``foundry_bridge.runner_protocol.Backend`` (``name = "local"``). azure-ai-evaluation
is imported only when a run needs it. ``fake_judge`` holds a fake OpenAI-compatible server for tests.
"""

from ._backend import LocalBackend
from ._cache import ResponseCache, cache_key, default_cache_dir

__all__ = ["LocalBackend", "ResponseCache", "cache_key", "default_cache_dir"]
