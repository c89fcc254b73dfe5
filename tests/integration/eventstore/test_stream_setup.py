"""Stream set-up is idempotent and safe: a stream that would lose events is refused, by name.

Each case creates the stream first, as an operator (or another tool) might have, then opens the
event store on it. The store must refuse, naming the property and its value, and leave the
stream exactly as it found it. Replicas are converged instead (see test_cluster.py); on a single
server a replica count it cannot reach is an error that says so.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import nats
import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import DatabaseError
from nats.js import api

from eventstore.jetstream import JetStreamFactory
from tests.support.aggregates import Ledger

SAFE: dict[str, Any] = {
    "storage": api.StorageType.FILE,
    "deny_delete": True,
    "deny_purge": True,
    "allow_atomic": True,
    "allow_direct": True,
}


async def _jsm_call(url: str, call: Any) -> Any:
    nc = await nats.connect(url)
    try:
        return await call(nc.jetstream()._jsm)
    finally:
        await nc.close()


def _create(url: str, stream: str, **config: Any) -> None:
    """Create ``stream`` (subjects ``<stream>.>``) with the safe settings overridden by
    ``config``; ``sealed=True`` is applied by an update, as the server requires."""
    sealed = config.pop("sealed", False)
    cfg = api.StreamConfig(name=stream, subjects=[f"{stream}.>"], **{**SAFE, **config})

    async def create(jsm: Any) -> None:
        await jsm.add_stream(cfg)
        if sealed:
            await jsm.update_stream(cfg.evolve(sealed=True))

    asyncio.run(_jsm_call(url, create))


def _config(url: str, stream: str) -> api.StreamConfig:
    async def info(jsm: Any) -> api.StreamConfig:
        return (await jsm.stream_info(stream)).config

    config: api.StreamConfig = asyncio.run(_jsm_call(url, info))
    return config


def _open(url: str, stream: str, **env: str) -> JetStreamFactory:
    return JetStreamFactory({"NATS_URL": url, "NATS_STREAM": stream, **env})


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"max_age": 3600}, "max_age=3600s"),
        ({"max_msgs": 10}, "max_msgs=10"),
        ({"max_bytes": 1 << 20}, "max_bytes=1048576"),
        ({"max_msgs_per_subject": 5}, "max_msgs_per_subject=5"),
        ({"max_msgs": 10, "discard": api.DiscardPolicy.NEW}, "max_msgs=10"),
        ({"storage": api.StorageType.MEMORY}, "storage=memory"),
        ({"retention": api.RetentionPolicy.WORK_QUEUE}, "retention=workqueue"),
        ({"retention": api.RetentionPolicy.INTEREST}, "retention=interest"),
        ({"no_ack": True}, "no_ack=true"),
        ({"sealed": True}, "sealed=true"),
        ({"deny_delete": False}, "deny_delete=false"),
        ({"deny_purge": False}, "deny_purge=false"),
        ({"allow_atomic": False}, "allow_atomic=false"),
        ({"allow_direct": False}, "allow_direct=false"),
    ],
)
def test_a_stream_that_would_lose_events_is_refused_by_name_and_left_alone(
    nats_url: str, nats_stream: str, config: dict[str, Any], named: str
) -> None:
    _create(nats_url, nats_stream, **config)
    before = _config(nats_url, nats_stream)
    with pytest.raises(DatabaseError, match=rf"stream {nats_stream} .*{named} \("):
        _open(nats_url, nats_stream).close()
    assert _config(nats_url, nats_stream) == before


def test_a_stream_on_other_subjects_is_refused(nats_url: str, nats_stream: str) -> None:
    _create(nats_url, nats_stream)
    with pytest.raises(DatabaseError, match=rf"subjects=\['{nats_stream}\.>'\].*OTHER\.>"):
        _open(nats_url, nats_stream, NATS_SUBJECT_PREFIX="OTHER").close()


def test_every_problem_is_named_at_once(nats_url: str, nats_stream: str) -> None:
    _create(nats_url, nats_stream, max_age=60, storage=api.StorageType.MEMORY)
    with pytest.raises(DatabaseError) as e:
        _open(nats_url, nats_stream).close()
    assert "max_age=60s" in str(e.value) and "storage=memory" in str(e.value)


def test_discard_new_without_limits_is_inert_and_accepted(nats_env: dict[str, str]) -> None:
    """Discard only acts at a limit, and every limit is refused: the store works as usual."""
    _create(nats_env["NATS_URL"], nats_env["NATS_STREAM"], discard=api.DiscardPolicy.NEW)
    app = Application[uuid.UUID](env=nats_env)
    try:
        ledger = Ledger()
        ledger.add("a")
        app.save(ledger)
        assert app.repository.get(ledger.id).tokens == ["a"]
    finally:
        app.close()


def test_replicas_a_single_server_cannot_hold_are_an_error_naming_them(
    nats_url: str, nats_stream: str
) -> None:
    with pytest.raises(DatabaseError, match=rf"cannot create stream {nats_stream} \(3 replica"):
        _open(nats_url, nats_stream, NATS_STREAM_REPLICAS="3").close()
    _open(nats_url, nats_stream).close()  # R1
    with pytest.raises(DatabaseError, match=r"num_replicas=1 .*NATS_STREAM_REPLICAS.* asks for 3"):
        _open(nats_url, nats_stream, NATS_STREAM_REPLICAS="3").close()
    assert _config(nats_url, nats_stream).num_replicas == 1


def test_set_up_is_idempotent_when_processes_start_together(
    nats_url: str, nats_stream: str
) -> None:
    """Eight stores opening one new stream at once: all succeed, and the stream is as wanted."""
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            _open(nats_url, nats_stream).close()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    config = _config(nats_url, nats_stream)
    assert (config.max_msgs, config.max_bytes, config.max_age, config.num_replicas) == (
        -1,
        -1,
        0,
        1,
    )
    # Names on chained writes are kept a second for duplicate detection, not two minutes.
    assert config.duplicate_window == 1.0
