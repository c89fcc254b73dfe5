"""The message envelope and the error translation, without a server."""

from __future__ import annotations

import uuid

import pytest
from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    OperationalError,
    StoredEvent,
)
from nats.errors import NoServersError
from nats.errors import TimeoutError as NatsTimeoutError

from eventstore._codec import decode, encode, position, subject_token
from eventstore._errors import WrongLastSequence, api_error, translate
from eventstore._records import Row
from eventstore.jetstream import OutcomeUnknownError, _stored


@pytest.mark.parametrize("oid", [uuid.uuid4(), "plain-id", "with.dots and spaces ü"])
def test_round_trip(oid: uuid.UUID | str) -> None:
    e = StoredEvent(originator_id=oid, originator_version=7, topic="m:T", state=b'{"a":1}')
    payload = encode(e)
    assert decode(payload) == (oid, 7, "m:T", b'{"a":1}')
    assert position(payload) == 7


def test_subject_tokens_never_collide_or_break_subjects() -> None:
    assert subject_token("abc-1_2") == "abc-1_2"
    odd = subject_token("a.b*c>d e")
    assert odd.startswith("~") and not set(".*> ") & set(odd)
    assert subject_token("~x") != "~x"


def test_an_undecodable_row_names_its_sequence_and_subject() -> None:
    with pytest.raises(DataError, match=r"stream sequence 42 on subject 'S\.e\.x'"):
        _stored(Row(42, b"\xff garbage", "S.e.x"))
    with pytest.raises(DataError, match="stream sequence 3"):
        _stored(Row(3, b"", "S.e.y"))


def test_errors_map_to_pep_249() -> None:
    assert isinstance(api_error(10071, 400, "wrong last sequence", "s"), WrongLastSequence)
    assert isinstance(api_error(10164, 400, "dup check", "s"), IntegrityError)
    assert type(api_error(10999, 500, "other", "s")) is DatabaseError
    for exc in (NatsTimeoutError(), NoServersError(), TimeoutError(), OSError()):
        e = translate(exc, url="nats://h:1", where="w")
        assert isinstance(e, OperationalError) and "nats://h:1" in str(e)
    assert issubclass(OutcomeUnknownError, OperationalError)
    kept = IntegrityError("x")
    assert translate(kept, url="u", where="w") is kept


def test_urls_in_the_stores_log_lines_have_their_password_masked() -> None:
    from eventstore._stream import _without_password

    assert _without_password("nats://fleet:s3cret@nats:4222") == "nats://fleet:***@nats:4222"
    assert _without_password("nats://nats:4222") == "nats://nats:4222"
    assert _without_password("tls://token@nats:4222") == "tls://token@nats:4222"
