"""Build hook of cohort-client: generates the gRPC modules at build time.

The package metadata is in pyproject.toml; this file adds what a static
file cannot say:

* build_py runs grpcio-tools on proto/cohort/v1/pubsub.proto and writes
  cohort/v1/pubsub_pb2.py and pubsub_pb2_grpc.py, with mypy-protobuf's .pyi
  stubs beside them, into the build directory (into src/ for an editable
  install). Nothing generated is committed.
* sdist copies the proto into the source distribution (proto/...), so that
  an sdist, or a wheel built from one, builds without the repository.
* The runtime requirements on grpcio and protobuf are those of the
  grpcio-tools that generates the code: generated modules refuse to import
  under an older grpcio or another protobuf major version.

The proto is looked for in $COHORT_PROTO_ROOT, then ./proto (an sdist), then
../../proto (a checkout: client/python/ in the Cohort repository). pip 21.3
and later build a local directory in place; an older pip copies it to a
temporary directory first, where ../../proto is missing: upgrade pip, or
set COHORT_PROTO_ROOT to the repository's proto/ directory.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import List

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
PROTO = Path("cohort", "v1", "pubsub.proto")
GENERATED = ("pubsub_pb2.py", "pubsub_pb2.pyi", "pubsub_pb2_grpc.py",
             "pubsub_pb2_grpc.pyi")
# Used only where grpcio-tools is not installed (metadata queries outside a
# PEP 517 build); a real build derives them from grpcio-tools.
FALLBACK_REQUIREMENTS = ["grpcio>=1.66,<2", "protobuf>=5.26.1,<8"]


def _proto_root() -> Path:
    candidates = []
    if os.environ.get("COHORT_PROTO_ROOT"):
        candidates.append(Path(os.environ["COHORT_PROTO_ROOT"]))
    candidates += [HERE / "proto", HERE.parent.parent / "proto"]
    for root in candidates:
        if (root / PROTO).is_file():
            return root
    raise SystemExit(
        f"cohort-client: cannot find {PROTO} under any of "
        f"{', '.join(str(c) for c in candidates)}. Build from a Cohort "
        "checkout (client/python) with pip >= 21.3, from an sdist, or set "
        "COHORT_PROTO_ROOT to the repository's proto/ directory.")


def _runtime_requirements() -> List[str]:
    """grpcio and protobuf ranges that the generated modules accept."""
    try:
        tools_version = importlib.metadata.version("grpcio-tools")
        tools_requires = importlib.metadata.requires("grpcio-tools") or []
    except importlib.metadata.PackageNotFoundError:
        return list(FALLBACK_REQUIREMENTS)
    # pubsub_pb2_grpc.py checks grpcio >= the version that generated it.
    requirements = [f"grpcio>={tools_version},<2"]
    # pubsub_pb2.py checks protobuf >= its gencode version, same major; the
    # tools' own protobuf requirement is exactly that range.
    protobuf = [
        r.split(";")[0].strip()
        for r in tools_requires
        if r.replace(" ", "").lower().startswith("protobuf")
    ]
    requirements.append(protobuf[0] if protobuf else "protobuf>=5.26.1,<8")
    return requirements


def _plugin(directory: Path, name: str, function: str) -> Path:
    """A protoc plugin executable that runs mypy_protobuf.main.<function>.

    Written rather than found on PATH: pip's isolated build environment
    does not always put its scripts there.
    """
    path = directory / name
    path.write_text(f"#!{sys.executable}\n"
                    f"from mypy_protobuf.main import {function}\n"
                    f"{function}()\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def generate(out_dir: Path) -> None:
    """Writes the cohort/v1 generated modules under out_dir."""
    import grpc_tools  # pylint: disable=import-outside-toplevel
    from grpc_tools import protoc  # pylint: disable=import-outside-toplevel

    root = _proto_root()
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    (out_dir / "cohort" / "v1").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        mypy = _plugin(Path(tmp), "protoc-gen-mypy", "main")
        mypy_grpc = _plugin(Path(tmp), "protoc-gen-mypy_grpc", "grpc")
        args = [
            "grpc_tools.protoc",
            f"--proto_path={root}",
            f"--proto_path={well_known}",
            f"--plugin=protoc-gen-mypy={mypy}",
            f"--plugin=protoc-gen-mypy_grpc={mypy_grpc}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            f"--mypy_out=quiet:{out_dir}",
            f"--mypy_grpc_out=quiet:{out_dir}",
            str(root / PROTO),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"cohort-client: protoc failed on {root / PROTO}")
    for name in GENERATED:
        if not (out_dir / "cohort" / "v1" / name).is_file():
            raise SystemExit(f"cohort-client: protoc did not write {name}")


class BuildPyWithProtos(build_py):
    """build_py that also generates the gRPC modules."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            generate(HERE / "src")
        else:
            generate(Path(self.build_lib))

    def get_outputs(self, include_bytecode: bool = True) -> List[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs += [
                os.path.join(self.build_lib, "cohort", "v1", name)
                for name in GENERATED
            ]
        return outputs


class SdistWithProto(sdist):
    """sdist that carries the proto (it lives outside this directory)."""

    def make_release_tree(self, base_dir: str, files: List[str]) -> None:
        super().make_release_tree(base_dir, files)
        target = Path(base_dir) / "proto" / PROTO
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_proto_root() / PROTO, target)


setup(
    install_requires=_runtime_requirements(),
    cmdclass={
        "build_py": BuildPyWithProtos,
        "sdist": SdistWithProto
    },
)
