"""``FLEET_LLM_THINKING``: how reasoning models think (auto by default, on, off; any case); any
other value is refused naming the variable and the choices, before anything starts."""

from __future__ import annotations

import pytest

from agent_runtime.member.openai_client import THINKING_MODES as CLIENT_MODES
from fleet.config import THINKING_MODES, ConfigError, Settings


@pytest.mark.parametrize(
    ("raw", "mode"),
    [(None, "auto"), ("", "auto"), ("auto", "auto"), ("On", "on"), (" OFF ", "off")],
)
def test_the_thinking_mode_is_read(raw: str | None, mode: str) -> None:
    env = {} if raw is None else {"FLEET_LLM_THINKING": raw}
    assert Settings.from_env(env).llm_thinking == mode


@pytest.mark.parametrize("raw", ["maybe", "false", "0"])
def test_an_unknown_thinking_mode_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"FLEET_LLM_THINKING='{raw}' must be one of auto, on, off"
    ):
        Settings.from_env({"FLEET_LLM_THINKING": raw})


def test_the_settings_accept_exactly_what_the_client_does() -> None:
    assert THINKING_MODES == CLIENT_MODES
