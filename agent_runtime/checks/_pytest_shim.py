"""The ``pytest`` that tests see inside the sandbox: ``raises``, ``approx``, ``mark.parametrize``.

Copied there as ``pytest.py`` beside ``_test_runner.py``, never imported by Fleet (see that module
for why the real pytest is not used).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any


class _Raises:
    def __init__(self, expected: type[BaseException], match: str | None = None) -> None:
        self.expected = expected
        self.match = match
        self.value: BaseException | None = None

    def __enter__(self) -> _Raises:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if kind is None:
            raise AssertionError(f"DID NOT RAISE {self.expected}")
        if not issubclass(kind, self.expected):
            return False
        if self.match is not None and not re.search(self.match, str(value)):
            raise AssertionError(f"{value!r} does not match {self.match!r}")
        self.value = value
        return True


def raises(
    expected: type[BaseException], *args: Any, match: str | None = None, **kwargs: Any
) -> _Raises | None:
    if args:
        with _Raises(expected, match):
            args[0](*args[1:], **kwargs)
        return None
    return _Raises(expected, match)


class _Approx:
    def __init__(self, expected: Any, rel: float = 1e-6, abs_: float = 1e-12) -> None:
        self.expected, self.rel, self.abs = expected, rel, abs_

    def __eq__(self, other: object) -> bool:
        if isinstance(self.expected, list | tuple):
            if not isinstance(other, list | tuple) or len(other) != len(self.expected):
                return False
            pairs = zip(self.expected, other, strict=True)
            return all(_Approx(e, self.rel, self.abs) == o for e, o in pairs)
        if not isinstance(other, int | float):
            return False
        return math.isclose(other, self.expected, rel_tol=self.rel, abs_tol=self.abs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"approx({self.expected!r})"


def approx(expected: Any, rel: float = 1e-6, abs: float = 1e-12) -> _Approx:
    return _Approx(expected, rel, abs)


class _Mark:
    def parametrize(
        self, names: str | Iterable[str], values: Iterable[object]
    ) -> Callable[[Callable[..., object]], Callable[..., object]]:
        split = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)

        def mark(fn: Callable[..., object]) -> Callable[..., object]:
            fn._fleet_parametrize = (split, list(values))  # type: ignore[attr-defined]
            return fn

        return mark

    def __getattr__(self, name: str) -> Callable[..., object]:
        """Other marks (``skip``, ``slow``, …) leave the test as it is."""

        def mark(*a: object, **_k: object) -> object:
            return a[0] if a and callable(a[0]) else (lambda fn: fn)

        return mark


mark = _Mark()


def fail(msg: str = "") -> None:
    raise AssertionError(msg)
