"""The NATS agent backend: the JetStream work queue (``runtime``), its worker (``worker``) and the
wire format both ends share (``_wire``)."""
