"""Running agents: one sub-package per part, under the interface every part shares.

* ``api``: what a dispatcher may know (the ``AgentRuntime`` Protocol, its ``*Input`` and result
  types, the error root). Dispatchers import this, never a backend.
* ``member``: the agent member, the model caller every backend runs (a turn, a review, an
  assessment becomes a prompt, a chat call and a result): the OpenAI-compatible client, prompts,
  review and architect-choice parsing.
* ``checks``: the checks and the score built from them, the sandbox that runs model code, and
  each role's tools (``checks.role_checks``).
* ``ray_backend``: the Ray actor pools and their batching.
* ``nats_backend``: the JetStream work queue, its worker and its wire format.
"""
