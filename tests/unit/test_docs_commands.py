"""Every command the README and the docs pages show in a ```sh block still parses, and the
cheap ones run as written.

A ``tokenscale …`` line is parsed by the real command line (its subcommand and every option
must exist); the offline ones whose files are all in the repository (``plan``, ``render``,
``catalog``, ``crd``) run for real. A repository path any shown command names must exist.
"""

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers import ROOT
from tokenscale.cli.app import app

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REPO_DIRS = ("deploy/", "crds/", "charts/", "benchmarks/", "scripts/", "operator/", "docs/")
RUN_FOR_REAL = {"plan", "render", "catalog"}
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _commands(text: str) -> list[str]:
    """The command lines of every ```sh block: continuations joined, comments dropped."""
    out: list[str] = []
    for block in _BLOCK.findall(text):
        joined = re.sub(r"\s*\\\n\s*", " ", block)
        for raw in joined.splitlines():
            line = re.sub(r"\s+#\s.*$", "", raw).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def _simple_commands(line: str) -> list[list[str]]:
    """Split a shell line into its simple commands (argv lists), redirections cut off."""
    words = shlex.split(line)
    commands: list[list[str]] = [[]]
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word in {"&&", "||", "|", ";"}:
            commands.append([])
        elif word in {"<", ">", ">>", "2>"}:
            skip_next = True
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


DOCUMENTED = [
    (page.relative_to(ROOT).as_posix(), argv)
    for page in PAGES
    for line in _commands(page.read_text())
    for argv in _simple_commands(line)
]
TOKENSCALE = [(page, argv) for page, argv in DOCUMENTED if argv[0] == "tokenscale"]


def _ids(items: list[tuple[str, list[str]]]) -> list[str]:
    return [f"{page}:{' '.join(argv)[:60]}" for page, argv in items]


def test_the_docs_show_commands() -> None:
    subcommands = {argv[1] for _, argv in TOKENSCALE if len(argv) > 1}
    assert {"plan", "render", "run", "simulate", "bench", "playground"} <= subcommands
    pages = {page for page, _ in DOCUMENTED}
    assert "README.md" in pages


def test_the_readme_keeps_the_three_commands() -> None:
    readme = _commands((ROOT / "README.md").read_text())
    assert "pip install -e . && tokenscale plan deploy/examples/llama-3.1-8b-l4.yaml" in readme
    assert "bash scripts/test.sh" in readme
    assert "tokenscale playground" in readme


def _dry_parse(args: list[str]) -> tuple[int, str]:
    """Parse a command line without running it: ``--help`` is eager, so it answers once the
    parser has accepted the subcommand and every option name (and exits before files are read)."""
    result = CliRunner().invoke(app, [*args, "--help"])
    return result.exit_code, result.output


@pytest.mark.parametrize(("page", "argv"), TOKENSCALE, ids=_ids(TOKENSCALE))
def test_every_tokenscale_command_parses(page: str, argv: list[str]) -> None:
    if argv[1].startswith("-"):  # an option of tokenscale itself (--version): run it
        result = CliRunner().invoke(app, argv[1:])
        assert result.exit_code == 0, f"{page}: {' '.join(argv)}\n{result.output[-2000:]}"
        return
    code, output = _dry_parse(argv[1:])
    assert code == 0, f"{page}: {' '.join(argv)}\n{output[-2000:]}"
    assert "Usage:" in output


def _repo_paths(argv: list[str]) -> list[str]:
    return [w for w in argv if w.startswith(REPO_DIRS) and not w.endswith("/")]


@pytest.mark.parametrize(("page", "argv"), DOCUMENTED, ids=_ids(DOCUMENTED))
def test_every_repository_path_shown_exists(page: str, argv: list[str]) -> None:
    for path in _repo_paths(argv):
        assert (ROOT / path).exists(), f"{page}: {' '.join(argv)} names {path}, which is gone"


CHEAP = [
    (page, argv)
    for page, argv in TOKENSCALE
    if len(argv) > 1
    and argv[1] in RUN_FOR_REAL
    and all(not w.isupper() and "FILE" not in w and "<" not in w for w in argv[2:])
    and "-" not in argv[2:]
]


def test_some_documented_commands_run_for_real() -> None:
    assert {argv[1] for _, argv in CHEAP} >= {"plan", "render"}


@pytest.mark.parametrize(("page", "argv"), CHEAP, ids=_ids(CHEAP))
def test_cheap_documented_commands_run(
    page: str, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, argv[1:])
    assert result.exit_code == 0, f"{page}: {' '.join(argv)}\n{result.output[-2000:]}"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_the_extractor_sees_continuations_and_comments() -> None:
    text = "```sh\ntokenscale plan a.yaml \\\n    -o json   # a comment\n# whole\n```\n"
    assert _commands(text) == ["tokenscale plan a.yaml -o json"]
    assert _simple_commands("pip install -e . && tokenscale plan - < f.yaml") == [
        ["pip", "install", "-e", "."],
        ["tokenscale", "plan", "-"],
    ]


def test_the_parse_check_can_fail() -> None:
    assert _dry_parse(["plan", "x.yaml", "--no-such-option"])[0] == 2
    assert _dry_parse(["no-such-command"])[0] == 2


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    for target in _LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        path = target.split("#", 1)[0]
        assert (page.parent / path).exists(), f"{page.name} links to {target}, which is gone"
