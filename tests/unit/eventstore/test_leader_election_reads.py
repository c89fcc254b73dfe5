"""A read through the stream leader waits out an election longer than one request timeout.

A clustered stream that lost its leader answers "temporarily unavailable" (10008) until it has
elected a new one, which can take longer than one request timeout. A projectors process
restarted meanwhile used to give up after one timeout and exit; it now waits for the store's
election window. The connection is a stand-in that answers as JetStream does (a unit test of
the retry logic alone; the cluster tests and the soak's three-node run cover the real thing).
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass

import pytest
from eventsourcing.persistence import OperationalError

from eventstore._positions import Positions
from eventstore._reads import Reads
from eventstore._records import StreamSettings

TIMEOUT = 0.2
ELECTING = {"error": {"code": 503, "err_code": 10008, "description": "unavailable"}}
FOUND = {"message": {"seq": 7, "subject": "S.e.x", "data": base64.b64encode(b"row").decode()}}


@dataclass
class _Reply:
    data: bytes


class _Electing:
    """Answers ``STREAM.MSG.GET`` with 10008 until ``electing_s`` has passed, then the row."""

    def __init__(self, electing_s: float) -> None:
        self._until = asyncio.get_running_loop().time() + electing_s
        self.asked = 0

    async def request(self, subject: str, payload: bytes, timeout: float) -> _Reply:
        assert subject == "$JS.API.STREAM.MSG.GET.S"
        self.asked += 1
        now = asyncio.get_running_loop().time()
        return _Reply(json.dumps(FOUND if now >= self._until else ELECTING).encode())


def _reads(nc: _Electing) -> Reads:
    settings = StreamSettings(url="nats://x", stream="S", prefix="S", replicas=3, timeout=TIMEOUT)
    return Reads(nc, settings, Positions())  # type: ignore[arg-type]  # the stand-in's request


async def test_an_election_longer_than_one_timeout_is_waited_out() -> None:
    nc = _Electing(electing_s=TIMEOUT * 2.5)
    row = await _reads(nc).leader_get({"last_by_subj": "S.e.x"})
    assert row is not None and row.seq == 7 and row.payload == b"row"
    assert nc.asked > 2


async def test_an_election_past_the_window_is_an_operational_error() -> None:
    nc = _Electing(electing_s=60.0)
    window = StreamSettings(url="", stream="S", prefix="S", timeout=TIMEOUT).election_window
    t0 = asyncio.get_running_loop().time()
    with pytest.raises(OperationalError, match="10008"):
        await _reads(nc).leader_get({"last_by_subj": "S.e.x"})
    waited = asyncio.get_running_loop().time() - t0
    assert window - 0.6 < waited <= window + 0.5  # the last pause is at most 0.5 s


def test_the_window_is_several_request_timeouts() -> None:
    assert StreamSettings(url="", stream="S", prefix="S").election_window >= 4 * 5.0
