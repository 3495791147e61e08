"""Every command of the command reference (docs/commands/, one page per
command, generated from the module's command table) has its method, named
after it without the prefix in snake case, in both clients. A command added
to the module fails this until the library gains it."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

import redis_xset
import redis_xset.asyncio

DOCS = Path(__file__).resolve().parents[3] / "docs" / "commands"


def commands() -> List[str]:
    return sorted(p.name[len("xset.") : -len(".md")] for p in DOCS.glob("xset.*.md"))


def test_the_reference_is_there() -> None:
    assert len(commands()) >= 27


@pytest.mark.parametrize("cls", [redis_xset.XSet, redis_xset.asyncio.XSet], ids=["sync", "asyncio"])
def test_a_method_per_command(cls: type) -> None:
    missing = [c for c in commands() if not callable(getattr(cls, c.replace("-", "_"), None))]
    assert missing == [], f"no method for XSET.{', XSET.'.join(m.upper() for m in missing)}"
