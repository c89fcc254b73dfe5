"""What a multi-process test quotes from a child's log when it fails: the last traceback, whole."""

from __future__ import annotations

from fleet_testing.processes import last_traceback

LOG = """\
2026-11-26 19:40:01,100 ERROR dispatchers.deliberations: deliberation 1: failed
Traceback (most recent call last):
  File "old.py", line 1, in f
ValueError: an earlier one
2026-11-26 19:40:02,200 ERROR dispatchers.deliberations: deliberation 2: failed
Traceback (most recent call last):
  File "/venv/site-packages/ruff/_find_ruff.py", line 14, in find_ruff_bin
    ruff_exe = "ruff" + sysconfig.get_config_var("EXE")
               ~~~~~~~^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
TypeError: can only concatenate str (not "NoneType") to str
2026-11-26 19:40:03,300 INFO dispatchers.deliberations: later
stopped.
"""


def test_the_last_traceback_is_quoted_whole_with_the_record_that_logged_it() -> None:
    got = last_traceback(LOG).splitlines()
    assert got[0].endswith("deliberation 2: failed")
    assert got[-2] == "               ~~~~~~~^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
    assert got[-1] == 'TypeError: can only concatenate str (not "NoneType") to str'


def test_a_message_over_several_lines_is_kept_and_a_log_without_one_gives_nothing() -> None:
    log = "x\nTraceback (most recent call last):\n  File 'a', line 1\nKeyError: 'a\nb'\n\nnext\n"
    assert last_traceback(log).splitlines()[-2:] == ["KeyError: 'a", "b'"]
    assert last_traceback("2026-11-26 19:40:01,100 INFO fleet: up\n") == ""
