"""Fleet's fault-injection soak: processes of every kind SIGKILLed and restarted while
deliberations flow, then the invariants checked from the stream itself.

    .venv/bin/python -m bench.soak [--deliberations 300] [--rate 2] [--kill-every 3-6]
        [--cluster] [--kill nats,valkey,api,projectors,dispatcher,worker] [--seed N]
        [--ack-wait S] [--lease S] [--call-timeout S] [--timeout S] [--json FILE] [--keep]

Fleet runs split across processes, as an operator would run it (``_system``): one API, one
projectors node, two dispatchers and two ``fleet worker`` processes on the NATS agent backend,
a private nats-server (or a three-node cluster with every stream R3) and a private Valkey, all on
127.0.0.1, with the load generator as the model endpoint (a test double: canned answers after a
model-like delay; nothing here is about answer quality). Deliberations are submitted through
gRPC at a steady rate (``_load``) while every 3–6 s one process is SIGKILLed and started again
(``_chaos``). Then, with no more kills, every deliberation is given its deadline to end, and the
run is judged from JetStream itself (``_stream``, ``_verdicts``):

* no acknowledged submission lost: each task id the API acknowledged has a Requested event;
* no duplicate answer per (deliberation, agent, round) (nor critique, rating or score);
* no AgentFailed (nor a critique or rating recorded as failed) where an answer was stored: the
  agent results stream (``<STREAM>_AGENT_RESULTS``) holds every answer a worker stored;
* no status change after a terminal event (a late answer is recorded as late, nothing else);
* every deliberation reached a terminal state;
* ``fleet verify`` clean, asked through the API;
* the graph's deliberation count equals the submissions;
* every killed process came back.

It prints what was killed, how often, how long each took to come back and how long until
everything it held up moved again, then the verdicts; the exit status is 1 on any violation.
Every process is stopped at the end, on Ctrl-C too (and each dies with the soak if it is killed).
"""

from bench.soak._run import KINDS, SoakConfig, SoakResult, run_soak

__all__ = ["KINDS", "SoakConfig", "SoakResult", "run_soak"]
