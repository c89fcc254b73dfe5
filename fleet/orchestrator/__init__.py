"""Generated gRPC code lives under here (package path = proto package ``fleet.orchestrator.v1``)."""
