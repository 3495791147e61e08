"""Runs every ```python block of the given Markdown pages against one
server, each block on its own, once with redis-py speaking RESP2 and once
RESP3, the database flushed before each run. A block is a script: it
passes when it raises nothing (its own asserts check the replies).

Whatever host, port or protocol a block gives `redis.Redis(...)`, it
connects to 127.0.0.1:PORT with the protocol of the run, so the blocks can
show the defaults a reader would use.

  python run_blocks.py PORT PAGE [PAGE ...]

Prints one line per block and protocol; exits 1 if any failed. Started by
tests/it/python.rs with the interpreter of target/pyenv (scripts/lib.sh).
"""
import re
import sys
import traceback

import redis

FENCE = re.compile(r"^```python\s*$")


def blocks(path):
    """(line number, source) of each python block of the page."""
    out, lines = [], open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start = i + 1
            end = start
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            out.append((start + 1, "\n".join(lines[start:end]) + "\n"))
            i = end
        i += 1
    return out


def main():
    port, pages = int(sys.argv[1]), sys.argv[2:]
    original = redis.Redis
    protocol = {"value": 2}

    class Redis(original):
        def __init__(self, *args, **kwargs):
            kwargs.update(host="127.0.0.1", port=port, protocol=protocol["value"])
            super().__init__(*args, **kwargs)

    redis.Redis = Redis
    admin = original(host="127.0.0.1", port=port)
    failed = ran = 0
    for page in pages:
        for line, source in blocks(page):
            for proto in (2, 3):
                protocol["value"] = proto
                admin.flushall()
                where = f"{page}:{line} (RESP{proto})"
                try:
                    exec(compile(source, where, "exec"), {"__name__": "__block__"})
                    print(f"ok      {where}")
                except Exception:
                    failed += 1
                    print(f"FAILED  {where}\n{traceback.format_exc()}")
                ran += 1
    print(f"{ran - failed} passed, {failed} failed")
    sys.exit(1 if failed or not ran else 0)


if __name__ == "__main__":
    main()
