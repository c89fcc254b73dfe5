"""The actor's side of batched Ray calls: when a batch answers (``ActorBatches``).

Pure asyncio: each call waits on its own gate, so the test decides when each one finishes and
the answer times do not depend on the machine's speed.
"""

from __future__ import annotations

import asyncio

from agent_runtime.ray_backend._batches import ActorBatches

LONG = 30.0
"""A linger no test waits out: a batch that answers before it did so for another reason."""


def batches_with_gates(*names: str) -> tuple[ActorBatches, dict[str, asyncio.Event]]:
    gates = {n: asyncio.Event() for n in names}

    async def call(name: str) -> str:
        await gates[name].wait()
        return f"answer {name}"

    return ActorBatches({"call": call}), gates


async def test_the_call_that_completes_its_group_comes_back_without_lingering() -> None:
    batches, gates = batches_with_gates("a1", "a2", "b1")
    calls = [("call", "a1", "delib-A"), ("call", "a2", "delib-A"), ("call", "b1", "delib-B")]
    run = asyncio.ensure_future(batches.run("x", calls, LONG, 1.0))

    gates["a1"].set()
    await asyncio.sleep(0.05)
    assert not run.done()  # delib-A still waits for a2: a1 may linger for company

    gates["a2"].set()  # delib-A is complete; b1 (another deliberation) still runs
    out = await asyncio.wait_for(run, 2.0)
    assert [(o.kind, o.value) for o in out] == [
        ("ok", "answer a1"),
        ("ok", "answer a2"),
        ("pending", None),
    ]

    collecting = asyncio.ensure_future(batches.collect("x", [2], LONG))
    await asyncio.sleep(0)
    gates["b1"].set()  # the last call of its group: back at once too
    (b1,) = await asyncio.wait_for(collecting, 2.0)
    assert (b1.kind, b1.value) == ("ok", "answer b1")
    assert batches.open_batches == 0


async def test_calls_without_a_group_still_linger_for_their_batch() -> None:
    batches, gates = batches_with_gates("a", "b")
    run = asyncio.ensure_future(batches.run("y", [("call", "a", ""), ("call", "b", "")], 0.2, 1.0))
    gates["a"].set()
    await asyncio.sleep(0.05)
    assert not run.done()  # lingering: b may finish in time to travel with a
    out = await asyncio.wait_for(run, 2.0)  # it does not: a comes back alone after 0.2 s
    assert [o.kind for o in out] == ["ok", "pending"]
    gates["b"].set()
    (b,) = await batches.collect("y", [1], 0.2)
    assert b.kind == "ok"


async def test_an_unknown_method_fails_its_call_alone() -> None:
    batches, gates = batches_with_gates("a")
    gates["a"].set()
    out = await batches.run("z", [("call", "a", "d"), ("nope", "a", "d")], LONG, 1.0)
    assert out[0].kind == "ok"
    assert out[1].kind == "error" and "nope" in out[1].value
