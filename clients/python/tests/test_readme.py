"""Every ```python block of README.md runs against the test server, under
RESP2 and RESP3, the database flushed first; a block passes when it raises
nothing (its asserts check the replies). `redis.Redis(...)` and
`redis.asyncio.Redis(...)` in a block connect to the test server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest
import redis
import redis.asyncio

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks() -> List[Tuple[int, str]]:
    lines = README.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if re.match(r"^```python\s*$", lines[i]):
            end = i + 1
            while not lines[end].startswith("```"):
                end += 1
            out.append((i + 2, "\n".join(lines[i + 1 : end]) + "\n"))
            i = end
        i += 1
    return out


@pytest.fixture
def patched(port: int, monkeypatch: pytest.MonkeyPatch, request: Any) -> Iterator[int]:
    protocol: int = request.param
    for module in (redis, redis.asyncio):
        original = module.Redis

        def make(original: Any) -> Any:
            class Redis(original):  # type: ignore[misc]
                def __init__(self, *args: Any, **kwargs: Any) -> None:
                    kwargs.update(host="127.0.0.1", port=port, protocol=protocol)
                    super().__init__(*args, **kwargs)

            return Redis

        monkeypatch.setattr(module, "Redis", make(original))
    redis.Redis(port=port).flushall()
    yield protocol


def test_the_readme_has_blocks() -> None:
    assert len(blocks()) >= 6


@pytest.mark.parametrize("patched", [2, 3], indirect=True, ids=["resp2", "resp3"])
@pytest.mark.parametrize("line,source", blocks(), ids=[f"line{n}" for n, _ in blocks()])
def test_block(patched: int, line: int, source: str) -> None:
    exec(compile(source, f"README.md:{line}", "exec"), {"__name__": "__block__"})
