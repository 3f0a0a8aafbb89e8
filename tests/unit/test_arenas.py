"""The operator caps glibc's malloc arenas before its threads start (controller/arenas.py)."""

import platform

import pytest

from tokenscale.controller.arenas import limit_arenas


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_the_arenas_are_capped_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_arenas() is True


def test_an_explicit_malloc_arena_max_is_left_to_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas() is False
