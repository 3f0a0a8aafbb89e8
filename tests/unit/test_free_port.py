"""free_port: an OS-picked port, or one from TOKENSCALE_PORT_RANGE, never handed out twice."""

import contextlib
import socket

import pytest

from tokenscale.playground import processes
from tokenscale.playground.processes import PORT_RANGE_ENV, free_port, port_range


def test_a_range_is_parsed_inclusively_and_bad_ranges_name_the_variable() -> None:
    assert port_range("21000-21003") == range(21000, 21004)
    for bad in ("21000", "a-b", "30000-20000", "80-90", "60000-70000", ""):
        with pytest.raises(ValueError, match=PORT_RANGE_ENV):
            port_range(bad)


def test_ports_come_from_the_range_are_distinct_and_skip_a_bound_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = int(held.getsockname()[1])  # the OS's ephemeral range: well above 1026
        # Five ports around one a listener holds: four come out, the listener's never does.
        monkeypatch.setenv(PORT_RANGE_ENV, f"{taken - 2}-{taken + 2}")
        got = [free_port() for _ in range(4)]
    assert len(set(got)) == 4
    assert all(taken - 2 <= p <= taken + 2 for p in got)
    assert taken not in got


def test_without_a_range_the_os_picks_and_never_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PORT_RANGE_ENV, raising=False)
    got = [free_port() for _ in range(20)]
    assert len(set(got)) == 20


def test_a_port_the_os_names_again_is_not_handed_out_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS hands a freed ephemeral port back (seen under load: 19 distinct of 20); the
    second time it names one this process handed out, free_port asks again."""
    monkeypatch.delenv(PORT_RANGE_ENV, raising=False)
    named = iter([40001, 40001, 40001, 40002])

    class Named:
        def __init__(self, *args: object) -> None:
            self.port = next(named)

        def bind(self, address: object) -> None:
            pass

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

        def close(self) -> None:
            pass

    monkeypatch.setattr(processes.socket, "socket", Named)
    monkeypatch.setattr(processes, "_handed_out", set())
    assert [free_port(), free_port()] == [40001, 40002]
