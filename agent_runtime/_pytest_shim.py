"""The ``pytest`` that tests see inside the sandbox: ``raises``, ``approx``, ``mark.parametrize``.

Copied there as ``pytest.py`` beside ``_test_runner.py``, never imported by Fleet (see that module
for why the real pytest is not used).
"""

import math


class _Raises:
    def __init__(self, expected, match=None):  # type: ignore[no-untyped-def]
        self.expected = expected
        self.match = match
        self.value = None

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, kind, value, tb):  # type: ignore[no-untyped-def]
        if kind is None:
            raise AssertionError(f"DID NOT RAISE {self.expected}")
        if not issubclass(kind, self.expected):
            return False
        if self.match is not None:
            import re

            if not re.search(self.match, str(value)):
                raise AssertionError(f"{value!r} does not match {self.match!r}")
        self.value = value
        return True


def raises(expected, *args, match=None, **kwargs):  # type: ignore[no-untyped-def]
    if args:
        with _Raises(expected, match):
            args[0](*args[1:], **kwargs)
        return None
    return _Raises(expected, match)


class _Approx:
    def __init__(self, expected, rel=1e-6, abs=1e-12):  # type: ignore[no-untyped-def]
        self.expected, self.rel, self.abs = expected, rel, abs

    def __eq__(self, other):  # type: ignore[no-untyped-def]
        if isinstance(self.expected, list | tuple):
            return len(other) == len(self.expected) and all(
                _Approx(e, self.rel, self.abs) == o
                for e, o in zip(self.expected, other, strict=True)
            )
        return math.isclose(other, self.expected, rel_tol=self.rel, abs_tol=self.abs)

    def __repr__(self):  # type: ignore[no-untyped-def]
        return f"approx({self.expected!r})"


def approx(expected, rel=1e-6, abs=1e-12):  # type: ignore[no-untyped-def]
    return _Approx(expected, rel, abs)


class _Mark:
    def parametrize(self, names, values):  # type: ignore[no-untyped-def]
        split = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)

        def mark(fn):  # type: ignore[no-untyped-def]
            fn._fleet_parametrize = (split, list(values))
            return fn

        return mark

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        return lambda *a, **k: a[0] if a and callable(a[0]) else (lambda fn: fn)


mark = _Mark()


def fail(msg=""):  # type: ignore[no-untyped-def]
    raise AssertionError(msg)
