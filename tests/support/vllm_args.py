"""Every ``vllm serve`` command line tokenscale renders, and vLLM's own parser run on them.

``command_lines()`` collects the argv after ``vllm serve`` of every container that runs vLLM:

- in every golden file under ``tests/golden`` (aggregated Deployments, LeaderWorkerSet leaders
  and workers, prefill/decode roles on one node and on LWS, GPU variants);
- in a fresh ``render_bundle`` of every InferenceService in ``deploy/examples`` (subfolders
  included), of the P/D specs of ``tests/unit/test_render_disaggregated.py`` (its fixture file
  and its LWS spec), of the pinned multi-node layouts of ``tests/unit/test_lws.py``, and of one
  service per speculative method (``tests/unit/test_speculative.py``'s long-answer 70B spec);
- the Deployments the examples themselves ship (the ``workloadRef`` example's own engine).

What the container would run is worked out as Kubernetes and the pod would: ``$(VAR)``
references in ``args`` are expanded from the container's environment plus what the
LeaderWorkerSet controller injects (``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE``,
``LWS_WORKER_INDEX``: 0 on a leader, 1 on a worker), with ``$$`` as a literal ``$``; a
``/bin/sh -c 'exec vllm serve "$@" …'`` command is run by the real ``/bin/sh`` with an
executable named ``vllm`` first on ``PATH`` that prints the argv it was given (the one stand-in:
no engine can start here, only its argument list is wanted).

``parse_in_vllm(python, lines)`` runs ``PARSER_SCRIPT`` once in a Python that imports vLLM and
returns vLLM's verdict per command line: its complaint (None where it accepted it) and
the launcher ``vllm serve`` chose for it.
"""

import functools
import json
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT
from tests.unit import test_lws, test_render_disaggregated, test_speculative
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.render import Owner, render_bundle

GOLDEN = ROOT / "tests" / "golden"
EXAMPLES = ROOT / "deploy" / "examples"
#: What the LeaderWorkerSet controller injects; the address is a made-up pod DNS name.
LWS_ENV = {"LWS_LEADER_ADDRESS": "svc-0.svc.inference", "LWS_GROUP_SIZE": "2"}
#: ``valueFrom`` variables (the pod's IP for the NIXL side channel) get a made-up value.
FIELD_REF_VALUE = "10.0.0.7"
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass(frozen=True)
class CommandLine:
    """One container's ``vllm serve`` argv (what follows ``vllm serve``)."""

    source: str
    """The golden file, or ``render <spec>`` for a fresh render."""
    container: str
    """The workload, pod template and container, e.g. ``LeaderWorkerSet/x worker engine``."""
    argv: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.source}: {self.container}"


def k8s_expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion of a command or argument: a defined variable is
    replaced, an undefined reference is left as written, ``$$`` is one ``$``."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _REF.sub(sub, text)


@functools.cache
def _echo_dir() -> Path:
    """A folder holding an executable ``vllm`` that prints its arguments NUL-separated (one per
    process)."""
    folder = Path(tempfile.mkdtemp(prefix="vllm-echo-"))
    echo = folder / "vllm"
    echo.write_text("#!/bin/sh\nprintf '%s\\0' \"$@\"\n")
    echo.chmod(echo.stat().st_mode | stat.S_IXUSR)
    return folder


def _through_shell(command: list[str], args: list[str], env: dict[str, str]) -> list[str]:
    folder = _echo_dir()
    out = subprocess.run(
        [*command, *args],
        env={"PATH": f"{folder}:/usr/bin:/bin", **env},
        capture_output=True,
        check=True,
        timeout=30,
    )
    return out.stdout.decode().split("\0")[:-1]


def serve_argv(container: dict[str, Any], lws_index: int | None) -> list[str] | None:
    """The argv after ``vllm serve`` the container runs, or None if it does not run vLLM."""
    env: dict[str, str] = {}
    if lws_index is not None:
        env |= {**LWS_ENV, "LWS_WORKER_INDEX": str(lws_index)}
    for var in container.get("env", []):
        value = var.get("value", FIELD_REF_VALUE if "valueFrom" in var else "")
        env[var["name"]] = k8s_expand(str(value), env)
    command = [k8s_expand(c, env) for c in container.get("command", [])]
    args = [k8s_expand(str(a), env) for a in container.get("args", [])]
    if command == ["vllm", "serve"]:
        return args
    if command[:2] == ["/bin/sh", "-c"] and "vllm serve" in command[2]:
        argv = _through_shell(command, args, env)
        assert argv[:1] == ["serve"], f"the shell ran vllm {argv[:1]}, not vllm serve"
        return argv[1:]
    return None


def _templates(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], int | None]]:
    spec = obj.get("spec") or {}
    if "leaderWorkerTemplate" in spec:
        lwt = spec["leaderWorkerTemplate"]
        yield "leader", lwt["leaderTemplate"], 0
        yield "worker", lwt["workerTemplate"], 1
    elif "template" in spec:
        yield "", spec["template"], None


def lines_of(source: str, objects: list[dict[str, Any]]) -> list[CommandLine]:
    """The ``vllm serve`` command lines of every container of every workload in ``objects``."""
    found: list[CommandLine] = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        for part, template, index in _templates(obj):
            for c in template["spec"].get("containers", []):
                argv = serve_argv(c, index)
                if argv is None:
                    continue
                name = f"{obj['kind']}/{obj['metadata']['name']}"
                where = " ".join(p for p in (name, part, c["name"]) if p)
                found.append(CommandLine(source, where, tuple(argv)))
    return found


def golden_lines() -> list[CommandLine]:
    out: list[CommandLine] = []
    for path in sorted(GOLDEN.rglob("*.yaml")):
        docs = list(yaml.safe_load_all(path.read_text()))
        out += lines_of(str(path.relative_to(ROOT)), docs)
    return out


def render_text(text: str, source: str) -> list[CommandLine]:
    """Plan and render every InferenceService in ``text`` (the plan's own replica count)."""
    out: list[CommandLine] = []
    for svc in parse_manifests(text):
        plan = plan_service(svc.spec, svc.metadata.name)
        if plan.replicas is None:
            continue
        bundle = render_bundle(
            svc.metadata.name,
            svc.metadata.namespace or "default",
            svc.spec,
            plan,
            max(plan.replicas.total, 1),
            Owner(svc.metadata.name, "uid-1"),
        )
        out += lines_of(f"render {source}", bundle.objects)
    return out


def example_lines() -> list[CommandLine]:
    """Fresh renders of every example, and the vLLM Deployments the examples ship."""
    out: list[CommandLine] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        out += render_text(text, rel)
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        out += lines_of(rel, [d for d in docs if d.get("kind") != "InferenceService"])
    return out


def fixture_lines() -> list[CommandLine]:
    """Fresh renders of the specs the render unit tests pin: P/D (one node, LWS), multi-node
    layouts, one service per speculative method."""
    out: list[CommandLine] = []
    for case, text in sorted(test_render_disaggregated.CASES.items()):
        out += render_text(text, f"tests/unit/test_render_disaggregated.py {case}")
    for name in sorted(test_lws.LAYOUTS):
        out += lines_of(f"render tests/unit/test_lws.py {name}", test_lws._render(name))
    long_spec = test_speculative.LONG
    for method, extra in SPECULATIVE_CASES.items():
        speculative = {"method": method, "acceptanceRate": 0.7, **extra}
        body = {
            "apiVersion": "tokenscale.io/v1alpha1",
            "kind": "InferenceService",
            "metadata": {"name": f"spec-{method.replace('_', '-')}", "namespace": "inference"},
            "spec": {
                **long_spec,
                "serving": {"speculative": speculative},
                "cost": {"gpuHourPrice": 3.0},
            },
        }
        out += render_text(yaml.safe_dump(body), f"speculative {method}")
    for case, lora in sorted(LORA_CASES.items()):
        body = {
            "apiVersion": "tokenscale.io/v1alpha1",
            "kind": "InferenceService",
            "metadata": {"name": f"lora-{case}", "namespace": "inference"},
            "spec": {**long_spec, "lora": lora, "cost": {"gpuHourPrice": 3.0}},
        }
        out += render_text(yaml.safe_dump(body), f"lora {case}")
    return out


#: LoRA services: Hugging Face ids as sources with the planner's maxLoras, and fixed
#: maxLoras / maxCpuLoras / maxLoraRank with paths in a volume.
LORA_CASES: dict[str, dict[str, Any]] = {
    "hub-ids": {
        "adapters": [
            {"name": "sql", "source": "yard1/llama-2-7b-sql-lora-test", "rank": 8},
            {"name": "chat", "source": "org/chat-lora", "rank": 16},
        ]
    },
    "volume": {
        "maxLoras": 4,
        "maxCpuLoras": 8,
        "maxLoraRank": 64,
        "adapterVolume": {"claimName": "adapters"},
        "adapters": [
            {"name": f"tenant-{i}", "source": f"/adapters/tenant-{i}", "rank": 64}
            for i in range(10)
        ],
    },
}


#: One service per speculative method, the proposers ``tests/unit/test_speculative.py`` uses.
SPECULATIVE_CASES: dict[str, dict[str, Any]] = {
    "ngram": {"numSpeculativeTokens": 5},
    "draft_model": {
        "draftModel": {"name": "meta-llama/Llama-3.2-1B-Instruct", "catalog": "llama-3.2-1b"}
    },
    "eagle": {"draftModel": {"name": "yuhuili/EAGLE-LLaMA3.1-Instruct-70B"}},
    "eagle3": {"draftModel": {"name": "org/eagle3-llama-3.1-70b"}},
    "mtp": {},
}


def command_lines() -> list[CommandLine]:
    return golden_lines() + example_lines() + fixture_lines()


@dataclass(frozen=True)
class Verdict:
    """What vLLM made of one command line."""

    error: str | None
    """Why it refused it (None: accepted)."""
    launch: str | None
    """The launcher ``vllm serve`` chose: ``api server``, ``multi api server``, ``headless``
    or ``dp supervisor`` (None when refused before launching)."""


def parse_in_vllm(python: str, lines: list[CommandLine]) -> list[Verdict]:
    """vLLM's verdict on each command line, from one subprocess."""
    payload = json.dumps([list(line.argv) for line in lines])
    # HF_HUB_OFFLINE=1 would make EngineArgs look the model up in the local HF cache
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "ERROR", "HF_HUB_OFFLINE": "0"}
    out = subprocess.run(
        [python, "-c", PARSER_SCRIPT],
        input=payload,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the parser script failed:\n{out.stderr[-4000:]}")
    answers = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(answers) == len(lines)
    return [Verdict(error, launch) for error, launch in answers]


PARSER_SCRIPT = r"""
# Runs in the Python that imports vLLM. Reads a JSON list of argvs (what follows `vllm serve`)
# on stdin; prints a JSON list: per argv, [None or what vLLM said about it, the launcher its
# ServeSubcommand.cmd chose]. The parser is built as vLLM's `vllm` console script builds it
# (vllm/entrypoints/cli/main.py main(): a FlexibleArgumentParser with subparsers
# dest="subparser", ServeSubcommand.subparser_init, which calls make_arg_parser of
# vllm/entrypoints/launchers/cli_args.py in 0.32), then per argv:
# parse_args(["serve", *argv]); ServeSubcommand.validate (validate_parsed_serve_args);
# ServeSubcommand.cmd with its four launchers replaced by recorders (its own pre-launch checks:
# --headless with --api-server-count, one data-parallel load-balancing mode);
# AsyncEngineArgs.from_cli_args; the argparse actions vLLM marks deprecated and its warnings;
# --kv-transfer-config against KVTransferConfig and KVConnectorFactory's registered connectors;
# --speculative-config's keys and values against SpeculativeConfig's pydantic fields.
import contextlib, io, json, logging, sys, types
from typing import Annotated
from pydantic import TypeAdapter, ValidationError
import vllm.entrypoints.cli.serve as serve_mod
from vllm.config.kv_transfer import KVTransferConfig
from vllm.config.speculative import SpeculativeConfig
from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.utils.argparse_utils import FlexibleArgumentParser

class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []
    def emit(self, record):
        self.seen.append(record.getMessage())

warned = Warnings()
logging.getLogger("vllm").addHandler(warned)
launched = []
def recorder(mode):
    def run(*args, **kwargs):
        launched.append(mode)
    return run
serve_mod.run_headless = recorder("headless")
serve_mod.run_multi_api_server = recorder("multi api server")
serve_mod.run_dp_supervisor = recorder("dp supervisor")
serve_mod.run_server = lambda args, **kw: None
serve_mod.uvloop = types.SimpleNamespace(run=lambda coro: launched.append("api server"))

parser = FlexibleArgumentParser(description="vLLM CLI")
subparsers = parser.add_subparsers(required=False, dest="subparser")
serve = serve_mod.ServeSubcommand()
serve_parser = serve.subparser_init(subparsers)
serve_parser.set_defaults(dispatch_function=serve.cmd)
deprecated = list(getattr(serve_parser, "_deprecated", ()))

def check_fields(cls, config, flag):
    fields = cls.__pydantic_fields__
    for key, value in config.items():
        if key not in fields:
            raise ValueError(f"{flag}: {cls.__name__} has no field {key!r}")
        f = fields[key]
        kind = Annotated[f.annotation, *f.metadata] if f.metadata else f.annotation
        try:
            TypeAdapter(kind).validate_python(value)
        except ValidationError as exc:
            raise ValueError(f"{flag}: {cls.__name__}.{key}: {exc}") from None

def check(argv):
    warned.seen.clear()
    launched.clear()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(["serve", *argv])
    except SystemExit:
        said = err.getvalue()
        return " ".join(said[said.find("error:"):].split())
    serve.validate(args)
    engine_args = AsyncEngineArgs.from_cli_args(args)
    for action in deprecated:
        if getattr(args, action.dest, action.default) != action.default:
            return f"deprecated: {'/'.join(action.option_strings)}"
    for message in warned.seen:
        if "deprecat" in message.lower() or "will be removed" in message:
            return f"warning: {message}"
    args.dispatch_function(args)
    if len(launched) != 1:
        return f"vllm serve would launch {launched}"
    kv = engine_args.kv_transfer_config
    if kv is not None:
        raw = json.loads(argv[argv.index("--kv-transfer-config") + 1])
        KVTransferConfig(**raw)
        if kv.kv_connector not in KVConnectorFactory._registry:
            return f"--kv-transfer-config: no KV connector {kv.kv_connector!r} in this vLLM"
    spec = engine_args.speculative_config
    if spec is not None:
        check_fields(SpeculativeConfig, spec, "--speculative-config")
    return None

answers = []
for argv in json.load(sys.stdin):
    try:
        error = check(argv)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    answers.append([error, launched[0] if len(launched) == 1 else None])
print(json.dumps(answers))
"""
