"""Test doubles that benchmarks and tests share; never imported by the product.

``loadgen``: the load generator, an OpenAI-compatible server of ours that answers instantly or
after a delay, hangs, fails, or answers from a script. It stands in for a model where load,
overhead or failure paths are measured; nothing it returns is used to claim that answers are good.

``processes``: ``fleet up --components …`` and ``fleet worker`` as child processes that can be
SIGKILLed and started again; ``nats_cluster``: a three-node JetStream cluster on loopback. The
multi-process tests and the fault-injection soak (``bench/soak``) launch Fleet through them.
"""
