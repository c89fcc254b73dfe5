"""The gRPC API (``fleet.orchestrator.v1.OrchestratorService``) on grpc.aio."""
