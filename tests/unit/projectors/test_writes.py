"""The runner's writer: one write in flight, its error raised once, nothing left behind."""

from __future__ import annotations

import threading

import pytest

from projectors._writes import Staged, Writer


def _staged(write: object, last: int = 1) -> Staged:
    return Staged(write, first=1, last=last, at=None)  # type: ignore[arg-type]


def test_a_write_runs_on_the_writer_thread_and_one_at_a_time() -> None:
    release = threading.Event()
    names: list[str] = []

    def write() -> int:
        names.append(threading.current_thread().name)
        assert release.wait(5)
        return 3

    writer = Writer("write-test")
    try:
        writer.submit(_staged(write, last=7))
        assert writer.busy
        with pytest.raises(RuntimeError, match="finish the write in flight"):
            writer.submit(_staged(write))
        release.set()
        done = writer.finish()
        assert done is not None and done[0].last == 7 and done[1] == 3
        assert not writer.busy and writer.finish() is None
        assert names[0].startswith("write-test")
    finally:
        writer.close()


def test_finish_raises_the_writes_error_and_close_drops_one() -> None:
    def failing() -> int:
        raise ConnectionError("store down")

    writer = Writer("write-test")
    writer.submit(_staged(failing))
    with pytest.raises(ConnectionError):
        writer.finish()
    assert not writer.busy
    writer.submit(_staged(failing))
    writer.close()  # leaving on an error of the caller's own: this one is dropped
    writer.close()  # idempotent
