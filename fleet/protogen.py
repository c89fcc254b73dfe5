"""Generate the gRPC stubs from ``proto/`` (the one checked command: ``make proto``).

The stubs are committed so that installing Fleet needs no code generator; a test regenerates them
into a temporary folder and fails if the committed ones differ from the ``.proto`` sources.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_FILES = ("fleet/orchestrator/v1/orchestrator.proto",)


def generate(repo_root: Path, out_dir: Path) -> None:
    from grpc_tools import protoc  # dev dependency: only needed to regenerate

    proto_root = repo_root / "proto"
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{proto_root}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(proto_root / p) for p in PROTO_FILES),
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed: {' '.join(args)}")


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    generate(root, Path(sys.argv[1]) if len(sys.argv) > 1 else root)
