"""A YAML loader for user input: duplicate keys are errors, nesting is bounded.

PyYAML's ``safe_load`` keeps the last of two equal keys (so one silently wins) and recurses
once per nesting level (so a 600-deep document ends in ``RecursionError``). Both become a
:class:`SpecError` naming where.
"""

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node

from tokenscale.api.errors import SpecError

#: Deepest nesting a manifest or profile may use; real manifests stay under 15.
MAX_DEPTH = 64
#: Most nodes a document may expand to (aliases counted each time they are used).
MAX_NODES = 200_000


def _check(node: Node, where: str) -> None:
    stack: list[tuple[Node, int]] = [(node, 0)]
    visited = 0
    while stack:
        current, level = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            raise SpecError.single(where, f"expands to more than {MAX_NODES} values; shrink it")
        if level > MAX_DEPTH:
            raise SpecError.single(where, f"nested deeper than {MAX_DEPTH} levels; flatten it")
        if isinstance(current, MappingNode):
            seen: set[Any] = set()
            for key, value in current.value:
                label = key.value if isinstance(key.value, str) else None
                if label is not None:
                    if label in seen:
                        line = key.start_mark.line + 1
                        raise SpecError.single(
                            where,
                            f"line {line}: duplicate key {label!r}; keep one (YAML would "
                            "silently use the last)",
                        )
                    seen.add(label)
                stack.append((key, level + 1))
                stack.append((value, level + 1))
        elif isinstance(current.value, list):
            stack.extend((child, level + 1) for child in current.value)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: ``line 2, column 4: not YAML or JSON: mapping values are not
    allowed here`` (PyYAML's own text spans several lines and cites ``"<unicode string>"``)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid"
        if exc.problem and exc.context:
            at = f" at line {exc.context_mark.line + 1}" if exc.context_mark else ""
            problem = f"{problem} ({exc.context}{at})"
        if mark is not None:
            return f"line {mark.line + 1}, column {mark.column + 1}: not YAML or JSON: {problem}"
        return f"not YAML or JSON: {problem}"
    return "not YAML or JSON: " + " ".join(str(exc).split())


def safe_load_all(text: str, where: str = "(yaml)") -> Iterator[Any]:
    """Every document of ``text``, checked; :class:`SpecError` for bad YAML, duplicate keys or
    too deep nesting."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise SpecError.single(where, yaml_problem(exc)) from exc
    except RecursionError as exc:
        raise SpecError.single(where, f"nested deeper than {MAX_DEPTH} levels; flatten it") from exc
    for node in nodes:
        if node is None:
            yield None
            continue
        _check(node, where)
        loader = yaml.SafeLoader("")
        try:
            yield loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise SpecError.single(where, yaml_problem(exc)) from exc
        finally:
            loader.dispose()


def safe_load(text: str, where: str = "(yaml)") -> Any:
    """The single document of ``text`` (None when empty), checked like :func:`safe_load_all`."""
    docs = list(safe_load_all(text, where))
    if len(docs) > 1:
        raise SpecError.single(where, "holds several YAML documents; give one")
    return docs[0] if docs else None
