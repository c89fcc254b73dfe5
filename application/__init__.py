"""The service layer over the eventsourcing ``Application``: commands in, events out, and the
reads that replay them.

* ``app``: ``FleetApplication``, the only writer of events (repository, mapper, recorder);
* ``stores``: the deliberation and plan stores, with the unit of work and its group commit
  (``group_commit``);
* ``feed``: the notification log as async iterators (history, then live);
* the use cases every edge calls: ``deliberations`` (deliberate, cancel), ``council_store``
  (council administration), ``plans`` (a plan's approval and the deliberations it requests),
  ``story_phases`` (a story's phase changes), ``task_context`` (the context an agent needs
  for a task: GetTaskContext's, and the prompts' through the ``ContextSource`` port);
* ``ports``: every Protocol the layers above are written against (the store's faces, the feed,
  the read side's board and graph, the council directory, the context source), in one file;
* the read side: ``queries`` (status and results from the cache's view model, ``views``, or a
  replay; history; Cypher through the graph's read port), ``listing``, and what needs nothing
  but the events: ``timeline`` (a deliberation's history as rows), ``replay`` (a fold to any
  version), ``watch`` (one feed subscription fanned out to every watcher);
* ``errors``: the one not-found root (``NotFoundError``) and what a read can refuse.

The projectors implement the read side's ports (the cache's board, the history graph) and import
its view model; nothing here imports them.

It imports aggregates and the eventsourcing library (the event store is chosen by the library's
``PERSISTENCE_MODULE`` setting) and nothing above it.
"""
