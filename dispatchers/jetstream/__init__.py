"""The dispatchers' JetStream adapters: the only modules of ``dispatchers`` that know NATS.

The policies beside this package (plans, deliberations, the protocol, councils, story phases)
decide; these modules carry their inputs and outputs over JetStream: the work queue dispatchers
share (``work_queue``), the planning service's subjects read through durable consumers
(``planning_consumer``, with ``plan_approvals`` and ``story_transitions`` on top).
"""
