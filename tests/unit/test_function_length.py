"""The pure core's planning, scaling and simulation code stays readable: no function longer than
80 lines, counted from ``def`` to its last line (``scripts/long_functions.py``)."""

import runpy
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "long_functions.py"
tool: dict[str, Any] = runpy.run_path(str(SCRIPT))


def test_no_function_in_planning_scaling_or_simulation_is_over_80_lines() -> None:
    over = tool["long_functions"](tool["PURE_CORE_DIRS"], 80)
    assert over == [], "split these into named helpers: " + ", ".join(
        f"{f.path.name}:{f.line} {f.name} ({f.lines} lines)" for f in over
    )


def test_the_count_runs_from_def_to_the_last_line_docstring_included(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(78))
    (tmp_path / "m.py").write_text(
        f'def short():\n    """doc."""\n{body}\n\n\n'
        f'class C:\n    @property\n    def long(self):\n        """doc."""\n'
        + body.replace("    ", "        ")
        + "\n        return 1\n"
    )
    lengths = {f.name: f.lines for f in tool["function_lengths"](tmp_path / "m.py")}
    assert lengths == {"short": 80, "long": 81}
    over = tool["long_functions"]((tmp_path,), 80)
    assert [(f.name, f.line, f.lines) for f in over] == [("long", 85, 81)]  # def, not @property
    assert tool["main"]([str(tmp_path)]) == 1
    assert tool["main"]([str(tmp_path), "--max-lines", "81"]) == 0
