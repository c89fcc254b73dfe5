"""``AsyncClosing``: ``async with`` closes the object on leaving."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing"]


class AsyncClosing(abc.ABC):
    """Something that holds resources until ``close()``, usable as ``async with``.

    Entering returns the object as it is; a subclass that must start on entering overrides
    ``__aenter__``. Leaving awaits ``close()``, whatever ended the block.
    """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the object holds."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
