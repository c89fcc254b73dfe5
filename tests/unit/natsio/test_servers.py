"""NATS_URL may name the servers of a cluster, comma-separated."""

from __future__ import annotations

import pytest

from natsio import servers


def test_one_url_is_one_server_and_a_list_is_split_in_order() -> None:
    assert servers("nats://127.0.0.1:4222") == ["nats://127.0.0.1:4222"]
    assert servers("nats://a:1, nats://b:2,nats://c:3") == [
        "nats://a:1",
        "nats://b:2",
        "nats://c:3",
    ]


def test_an_empty_setting_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="NATS_URL"):
        servers(" , ")
