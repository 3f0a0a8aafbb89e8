"""Where the command line finds a model's ``config.json`` before planning: ``hfConfigFile``
(a path), or — for a ``model.name`` the catalog does not know — the Hugging Face Hub, through
``huggingface_hub`` (its cache, its token handling, ``HF_HUB_OFFLINE``). Either way the content
is inlined as ``hfConfig``; the planner itself reads no file and no network.
"""

import json
import logging
import os
import socket
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService
from tokenscale.catalog.models import find_model

#: What a user can give instead, named by every error about a model's config.json.
ALTERNATIVES = (
    "give spec.model.hfConfigFile (a path to the model's config.json), spec.model.hfConfig (its "
    "content inline) or spec.model.catalog (a key of `tokenscale catalog`)"
)


def _parsed(text: str, path: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError.single(where, f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise SpecError.single(where, f"{path} holds a {type(data).__name__}, not a JSON object")
    return data


def read_config_file(
    path: str, base: Path | None, where: str = "spec.model.hfConfigFile"
) -> dict[str, Any]:
    """The JSON object in ``path`` (relative paths from ``base``, the manifest's directory)."""
    full = Path(path)
    if not full.is_absolute() and base is not None:
        full = base / full
    try:
        text = full.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        fix = (
            ALTERNATIVES
            if where.startswith("spec.model")
            else "give the adapter's rank and targetModules, or adapterConfig (its content inline)"
        )
        raise SpecError.single(where, f"cannot read {full}: {reason}; {fix}") from exc
    return _parsed(text, str(full), where)


def _hub_failure(exc: Exception) -> str:
    from huggingface_hub import errors  # noqa: PLC0415 - only when the Hub is asked

    if isinstance(exc, errors.OfflineModeIsEnabled | errors.LocalEntryNotFoundError):
        return (
            "it is not in the local Hugging Face cache and the Hub cannot be reached "
            "(offline, or HF_HUB_OFFLINE is set)"
        )
    if isinstance(exc, errors.GatedRepoError):
        return "the repository is gated: accept its licence on the Hub and set HF_TOKEN"
    if isinstance(exc, errors.RepositoryNotFoundError):
        return "no such repository on the Hub (or it is private: set HF_TOKEN)"
    if isinstance(exc, errors.EntryNotFoundError):
        return "the repository has no config.json"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


#: How long the Hub's host may take to accept a connection before the command gives up: the
#: Hub client itself retries an unreachable host five times with backoff (about 25 s).
HUB_CONNECT_TIMEOUT_S = 3.0
_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")


def hub_unreachable(endpoint: str, timeout_s: float = HUB_CONNECT_TIMEOUT_S) -> str | None:
    """Why ``endpoint``'s host does not accept a TCP connection within ``timeout_s``, or None
    when it does (or when a proxy carries the traffic: the client knows that way, not we)."""
    if any(os.environ.get(v) for v in _PROXY_VARIABLES):
        return None
    url = urllib.parse.urlsplit(endpoint)
    if url.hostname is None:
        return None
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"{url.hostname}:{port} did not answer within {timeout_s:g} s ({exc})"


def hub_config(repo_id: str, cache_dir: Path | None = None) -> dict[str, Any]:
    """``config.json`` of ``repo_id`` from the Hugging Face Hub or its local cache; a
    :class:`SpecError` at ``spec.model.name`` naming the alternatives when neither answers."""
    where = "spec.model.name"
    try:
        from huggingface_hub import constants, hf_hub_download  # noqa: PLC0415 - Hub only

        try:  # the local cache first: no network, no wait
            path = hf_hub_download(
                repo_id, "config.json", cache_dir=cache_dir, local_files_only=True
            )
        except Exception:
            if constants.HF_HUB_OFFLINE:
                raise
            down = hub_unreachable(constants.ENDPOINT)
            if down is not None:  # fail fast, not after the client's retries
                raise SpecError.single(
                    where,
                    f"{repo_id!r} is not in the catalog or the local Hugging Face cache, and the "
                    f"Hub cannot be reached: {down}; set HF_HUB_OFFLINE=1 to use only the "
                    f"cache (no wait), or {ALTERNATIVES}",
                ) from None
            Console(stderr=True).print(
                f"{repo_id}: not in the catalog or the local cache; asking the Hugging Face Hub "
                "(HF_HUB_OFFLINE=1 skips it)",
                style="dim",
                highlight=False,
                markup=False,
            )
            logging.getLogger("huggingface_hub").setLevel(logging.ERROR)  # its retry chatter
            path = hf_hub_download(repo_id, "config.json", cache_dir=cache_dir)
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise SpecError.single(where, f"huggingface_hub is not installed; {ALTERNATIVES}") from exc
    except SpecError:
        raise
    except Exception as exc:
        raise SpecError.single(
            where,
            f"{repo_id!r} is not in the catalog and its config.json could not be read from the "
            f"Hugging Face Hub: {_hub_failure(exc)}; {ALTERNATIVES}",
        ) from exc
    return _parsed(Path(str(path)).read_text(encoding="utf-8"), f"{repo_id} config.json", where)


def inline_model_source(
    service: InferenceService, base: Path | None, cache_dir: Path | None = None
) -> InferenceService:
    """``service`` with its model's config.json inlined as ``hfConfig`` when it names a file,
    or only a Hugging Face id the catalog does not know; otherwise unchanged."""
    m = service.spec.model
    if m.hf_config_file is not None:
        config = read_config_file(m.hf_config_file, base)
    elif (
        m.catalog is None
        and m.architecture is None
        and m.hf_config is None
        and m.hf_config_ref is None
        and find_model(m.name) is None
    ):
        config = hub_config(m.name, cache_dir)
    else:
        return service
    # the path stays beside its content: the plan's model_source names the file
    model = m.model_copy(update={"hf_config": config})
    return service.model_copy(update={"spec": service.spec.model_copy(update={"model": model})})


def inline_adapter_configs(service: InferenceService, base: Path | None) -> InferenceService:
    """``service`` with each ``spec.lora.adapters[i].adapterConfigFile`` read into
    ``adapterConfig`` (the path is kept beside it, as hfConfigFile's is)."""
    lora = service.spec.lora
    if lora is None or all(a.adapter_config_file is None for a in lora.adapters):
        return service
    adapters = [
        a
        if a.adapter_config_file is None
        else a.model_copy(
            update={
                "adapter_config": read_config_file(
                    a.adapter_config_file, base, f"spec.lora.adapters[{i}].adapterConfigFile"
                )
            }
        )
        for i, a in enumerate(lora.adapters)
    ]
    spec = service.spec.model_copy(update={"lora": lora.model_copy(update={"adapters": adapters})})
    return service.model_copy(update={"spec": spec})


def model_source_for(file: Path) -> Callable[[InferenceService], InferenceService]:
    """Inline a model's config.json from ``hfConfigFile`` (relative to the manifest ``file``) or
    the Hugging Face Hub, and the adapters' ``adapterConfigFile``s, before the planner sees the
    spec (every command that plans)."""
    base = None if str(file) == "-" else file.resolve().parent
    return lambda service: inline_adapter_configs(inline_model_source(service, base), base)
