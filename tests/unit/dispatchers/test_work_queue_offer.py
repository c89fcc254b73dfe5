"""How the JetStream work queue's offer reads the server's answers (a unit test of that logic
with a scripted JetStream context; the queue itself runs on real nats-server in
tests/integration/dispatchers and tests/e2e)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import APIError

from dispatchers.jetstream import work_queue as jetstream_work_queue
from dispatchers.jetstream.work_queue import JetStreamWorkQueue


class ScriptedJetStream:
    def __init__(self, *answers: BaseException | None) -> None:
        self.answers = list(answers)
        self.publishes = 0

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> Any:
        self.publishes += 1
        answer = self.answers.pop(0) if self.answers else None
        if answer is not None:
            raise answer
        return None


class FakeNats:
    def __init__(self, js: ScriptedJetStream) -> None:
        self.js = js

    def jetstream(self) -> ScriptedJetStream:
        return self.js


def queue(js: ScriptedJetStream) -> JetStreamWorkQueue:
    q = JetStreamWorkQueue(FakeNats(js))  # type: ignore[arg-type]
    q._ready = True  # the stream exists: only offer's own logic is under test
    return q


def api_error(code: int, err_code: int) -> APIError:
    return APIError(code=code, err_code=err_code, description=f"error {err_code}")


@pytest.mark.parametrize("err_code", [10077, 10158])
async def test_a_notice_queued_or_being_queued_by_another_dispatcher_is_an_offer_made(
    err_code: int,
) -> None:
    js = ScriptedJetStream(api_error(400 if err_code == 10077 else 503, err_code))
    q = queue(js)
    await q.offer(uuid.uuid4())  # no error: the notice is (or is about to be) there
    assert js.publishes == 1


async def test_an_offer_the_stream_cannot_take_yet_is_retried() -> None:
    js = ScriptedJetStream(NatsTimeoutError(), api_error(503, 10008), None)
    q = queue(js)
    await q.offer(uuid.uuid4())
    assert js.publishes == 3 and q.offered == 1


async def test_a_refusal_that_will_not_pass_is_raised_at_once() -> None:
    js = ScriptedJetStream(api_error(400, 10060))
    with pytest.raises(APIError):
        await queue(js).offer(uuid.uuid4())
    assert js.publishes == 1


async def test_an_offer_gives_up_when_the_stream_stays_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jetstream_work_queue, "OFFER_RETRY_S", 0.3)
    js = ScriptedJetStream(*[NatsTimeoutError() for _ in range(100)])
    with pytest.raises(NatsTimeoutError):
        await queue(js).offer(uuid.uuid4())
    assert 1 < js.publishes < 100
