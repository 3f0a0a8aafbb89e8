"""``tokenscale check FILE``: the production-readiness checklist for each InferenceService.

Plans and renders each service as ``tokenscale render`` would, then judges the checklist
(``render/readiness.py``). Alerts are judged from the PrometheusRule documents FILE carries
(append the chart's rendered ``prometheusrule.yaml`` to check them). Exit 0 when every item of
every service passes, 1 otherwise, 2 for invalid input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tokenscale.cli.inputs import TableOrJson, fail_invalid, read_input

if TYPE_CHECKING:
    from rich.console import Console

    from tokenscale.render.readiness import ReadinessItem


def alert_names(docs: list[Any]) -> frozenset[str]:
    """The alert names of every ``PrometheusRule`` document (``spec.groups[].rules[].alert``)."""
    names: set[str] = set()
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "PrometheusRule":
            continue
        for group in (doc.get("spec") or {}).get("groups") or []:
            for rule in (group or {}).get("rules") or []:
                if isinstance(rule, dict) and isinstance(rule.get("alert"), str):
                    names.add(rule["alert"])
    return frozenset(names)


def check_command(
    file: Annotated[Path, typer.Argument(help="InferenceService manifest (YAML, '-' for stdin).")],
    output: Annotated[
        TableOrJson, typer.Option("-o", "--output", help="Output format.")
    ] = TableOrJson.table,
) -> None:
    """Judge each InferenceService in FILE against the production-readiness checklist (with
    length classes: each class's InferenceService, as the operator runs them)."""
    from rich.console import Console  # noqa: PLC0415

    from tokenscale.api.errors import SpecError  # noqa: PLC0415
    from tokenscale.api.yaml_loader import safe_load_all  # noqa: PLC0415
    from tokenscale.cli.console import stdout_console  # noqa: PLC0415
    from tokenscale.cli.model_source import model_source_for  # noqa: PLC0415
    from tokenscale.planning import plan_service  # noqa: PLC0415
    from tokenscale.planning.validate import validate_manifests  # noqa: PLC0415
    from tokenscale.render import render_bundle  # noqa: PLC0415
    from tokenscale.render.length_classes import as_services  # noqa: PLC0415
    from tokenscale.render.readiness import readiness  # noqa: PLC0415
    from tokenscale.scaling import decide_plan_only  # noqa: PLC0415

    text = read_input(file)
    results: list[tuple[str, list[ReadinessItem]]] = []
    try:
        services = validate_manifests(text, model_source_for(file))
        if not services:
            Console(stderr=True).print(f"[red]error:[/] no InferenceService in {file}")
            raise typer.Exit(2)
        alerts = alert_names(list(safe_load_all(text)))
        for s in services:
            ns = s.metadata.namespace or "default"
            for name, spec in as_services(s.metadata.name, ns, s.spec):  # each length class's
                plan = plan_service(spec, name)
                objects: list[dict[str, Any]] = []
                if plan.replicas is not None:
                    replicas = decide_plan_only(plan, spec.scaling.replicas).replicas
                    objects = render_bundle(name, ns, spec, plan, replicas).objects
                results.append((name, readiness(spec, plan, objects, alerts)))
    except SpecError as err:
        fail_invalid(err, file)
        return
    if output is TableOrJson.json:
        data = [
            {
                "name": name,
                "ready": all(i.ok for i in items),
                "items": [{"item": i.item, "ok": i.ok, "why": i.why} for i in items],
            }
            for name, items in results
        ]
        typer.echo(json.dumps(data[0] if len(data) == 1 else data, indent=2))
    else:
        print_readiness(stdout_console(), results)
    if not all(i.ok for _, items in results for i in items):
        raise typer.Exit(1)


def print_readiness(console: Console, results: list[tuple[str, list[ReadinessItem]]]) -> None:
    """One checklist table per service, as wide as the console: the ``why`` column wraps at
    words (never cut), the item names stay whole."""
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    from tokenscale.render.readiness import summary  # noqa: PLC0415

    for name, items in results:
        table = Table(title=f"{name}: production readiness", title_justify="left")
        table.add_column("item", no_wrap=True)
        table.add_column("ok", no_wrap=True)
        table.add_column("why", overflow="fold", ratio=1)
        for i in items:
            table.add_row(i.item, "yes" if i.ok else Text("NO", "red"), Text(i.why))
        console.print(table)
        console.print(summary(items)[1], highlight=False, markup=False)
