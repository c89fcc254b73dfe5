"""``async with`` on an ``AsyncClosing`` closes it on leaving, however the block ends."""

from __future__ import annotations

import pytest

from lifecycle import AsyncClosing


class Holder(AsyncClosing):
    def __init__(self) -> None:
        self.closed = 0

    async def close(self) -> None:
        self.closed += 1


async def test_entering_returns_the_object_and_leaving_closes_it() -> None:
    holder = Holder()
    async with holder as entered:
        assert entered is holder
        assert holder.closed == 0
    assert holder.closed == 1


async def test_leaving_on_an_error_closes_it_and_lets_the_error_through() -> None:
    holder = Holder()
    with pytest.raises(RuntimeError, match="broke"):
        async with holder:
            raise RuntimeError("broke")
    assert holder.closed == 1


def test_a_subclass_must_say_how_it_closes() -> None:
    class Nothing(AsyncClosing):
        pass

    with pytest.raises(TypeError):
        Nothing()  # type: ignore[abstract]
