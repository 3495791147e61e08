from __future__ import annotations

from typing import Iterator, List

import pytest

from servers import Server, start_cluster


@pytest.fixture(scope="session")
def port() -> Iterator[int]:
    server = Server()
    yield server.port
    server.stop()


@pytest.fixture(scope="session")
def cluster_ports() -> Iterator[List[int]]:
    nodes = start_cluster(3)
    yield [n.port for n in nodes]
    for n in nodes:
        n.stop()
