"""``planning.story.transitioned`` on a real nats-server and event store: good transitions are
recorded once (a redelivered one too), bad bodies are parked on the dead-letter subject with
their reason, and the consumer goes on."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest

from aggregates.story import Phase, Story, story_id_of
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from dispatchers.jetstream.story_transitions import STORY_SUBJECT, StoryTransitionConsumer
from fleet.embedded.nats import NatsServer
from natsio import DEAD_LETTER_STREAM
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


async def test_transitions_are_recorded_once_and_bad_ones_parked_with_the_reason(
    private_nats_server: NatsServer,
) -> None:
    url = private_nats_server.url
    env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": url, "NATS_STREAM": "ST"}
    app = await asyncio.to_thread(FleetApplication, env)
    store = ApplicationDeliberationStore(app)
    nc = await nats.connect(url)
    js = nc.jetstream()
    good = {"story_id": "s-1", "from_phase": "DESIGN", "to_phase": "BUILD", "timestamp": 1.7e9}
    try:
        async with StoryTransitionConsumer(nc, store, max_deliver=2) as consumer:
            await asyncio.wait_for(consumer.consuming.wait(), 10)
            assert await _has_stream(js, STORY_SUBJECT)
            for body in [
                json.dumps(good).encode(),
                json.dumps(good).encode(),  # the planning service published it twice
                b"{not json",
                json.dumps({**good, "to_phase": "SHIPPED"}).encode(),
                json.dumps({**good, "from_phase": "BUILD", "to_phase": "TEST"}).encode(),
            ]:
                await js.publish(STORY_SUBJECT, body)
            await eventually(lambda: consumer.accepted + consumer.parked == 5, timeout=20)
        story = await asyncio.to_thread(app.repository.get, story_id_of("s-1"))
        assert isinstance(story, Story) and story.phase is Phase.TEST
        assert [(f.value, t.value) for f, t, _ in story.transitions] == [
            ("DESIGN", "BUILD"),
            ("BUILD", "TEST"),
        ]
        sub = await js.pull_subscribe("fleet.deadletter.>", stream=DEAD_LETTER_STREAM)
        parked = await sub.fetch(2, timeout=5)
        reasons = sorted(m.headers["Fleet-Dead-Letter-Reason"] for m in parked if m.headers)
        assert [r.split(":")[0] for r in reasons] == ["bad message", "bad message"]
        assert "not JSON" in reasons[0] + reasons[1] and "to_phase" in reasons[0] + reasons[1]
    finally:
        await nc.close()
        app.close()


async def _has_stream(js: nats.js.JetStreamContext, subject: str) -> bool:
    try:
        await js.find_stream_name_by_subject(subject)
    except nats.js.errors.NotFoundError:
        return False
    return True


class _SlowCluster(StoryTransitionConsumer):
    """A cluster placing a new replicated stream: the first two set-up requests time out."""

    failures = 2

    async def _create_durable(self, stream: str) -> None:
        if self.failures:
            self.failures -= 1
            raise nats.errors.TimeoutError
        await super()._create_durable(stream)


async def test_a_set_up_that_times_out_is_tried_again_and_the_consumer_consumes(
    private_nats_server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the consumer's task ended on the first timeout and nothing said so: a node that
    looked up never consumed a story transition."""
    url = private_nats_server.url
    env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": url, "NATS_STREAM": "SC"}
    app = await asyncio.to_thread(FleetApplication, env)
    store = ApplicationDeliberationStore(app)
    nc = await nats.connect(url)
    good = {"story_id": "s-2", "from_phase": "DESIGN", "to_phase": "BUILD", "timestamp": 1.7e9}
    try:
        async with _SlowCluster(nc, store) as consumer:
            await asyncio.wait_for(consumer.consuming.wait(), 20)
            assert consumer.failures == 0
            await nc.jetstream().publish(STORY_SUBJECT, json.dumps(good).encode())
            await eventually(lambda: consumer.accepted == 1, timeout=20)
        retries = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
        assert len(retries) == 2 and "attempt 1" in retries[0] and "attempt 2" in retries[1]
    finally:
        await nc.close()
        app.close()
