"""Harnesses that run Fleet as an operator would, split across processes on one machine.

For the end-to-end tests and the fault-injection soak (``bench/soak``): ``fleet up`` and
``fleet worker`` children (``processes``) and a three-node JetStream cluster on loopback
(``nats_cluster``). The product never imports this package; it lives here, as
``temporalio.testing`` does in its SDK, so that ``tests/`` and ``bench/`` share one launcher
without the benchmarks importing the tests.
"""
