"""Request traces: parsers for the public formats, scaling, statistics and a synthetic generator.

Formats (``parse_trace`` detects them from the header / first line):

- **Azure LLM inference** CSV: ``TIMESTAMP,ContextTokens,GeneratedTokens`` with wall-clock
  timestamps (``2023-11-16 18:15:46.6805900``; 7 fractional digits are cut to microseconds).
- **Mooncake** JSONL: ``{"timestamp": ms, "input_length": n, "output_length": m,
  "hash_ids": [...]}``; ``hash_ids`` name 512-token prefix blocks (prefix-cache hits).
- **Generic CSV** with a column mapping ``arrival=COL,input=COL,output=COL`` and an
  ``arrival_unit`` (s or ms); arrivals may be numbers or ISO timestamps.

Arrivals are re-based so the first request arrives at 0 s. Everything here is pure: the CLI
reads the file and hands over its text.
"""

import csv
import dataclasses
import io
import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from tokenscale.api.base import MAX_TOKENS
from tokenscale.simulation.errors import TraceError

TraceFormat = Literal["auto", "azure", "mooncake", "csv"]
MOONCAKE_BLOCK_TOKENS = 512


@dataclass(frozen=True, slots=True)
class TraceRequest:
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_blocks: tuple[int, ...] = ()
    """Hashes of the prompt's leading ``block_tokens``-token blocks (shared prefixes hit)."""
    adapter: int = -1
    """The LoRA adapter it addresses (index into ``spec.lora.adapters``); -1: the base model."""
    priority: int = 0
    """Its class's InferenceObjective priority (higher is served first; < 0: sheddable)."""


@dataclass(frozen=True)
class Trace:
    requests: tuple[TraceRequest, ...]
    source: str
    block_tokens: int = MOONCAKE_BLOCK_TOKENS

    @property
    def duration_s(self) -> float:
        return self.requests[-1].arrival_s if self.requests else 0.0


@dataclass(frozen=True)
class TraceStats:
    requests: int
    duration_s: float
    mean_rps: float
    peak_rps: float
    """Busiest ``peak_window_s`` window."""
    peak_window_s: float
    input_mean: float
    input_p95: float
    input_p99: float
    output_mean: float
    output_p95: float
    output_p99: float


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (q in [0, 1])."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_values)))
    return float(sorted_values[rank - 1])


def percentile(values: Sequence[float], q: float) -> float:
    return _percentile(sorted(values), q)


def _parse_time(text: str, unit_s: float, where: str) -> float:
    """Seconds from a number in ``unit_s`` seconds or an ISO-like timestamp (7+ digits → 6)."""
    text = text.strip()
    try:
        return float(text) * unit_s
    except ValueError:
        pass
    if "." in text:
        head, frac = text.split(".", 1)
        digits = "".join(c for c in frac if c.isdigit())
        tail = frac[len(digits) :]
        text = f"{head}.{digits[:6]}{tail}"
    try:
        stamp = datetime.fromisoformat(text)
        if stamp.tzinfo is None:  # wall clock without a zone: read as UTC, not the local zone
            stamp = stamp.replace(tzinfo=UTC)
        return stamp.timestamp()
    except ValueError as exc:
        raise TraceError(
            f"{where}: cannot read the timestamp {text!r}; use seconds (or ms with "
            "--arrival-unit ms) or ISO 8601"
        ) from exc


def _rebased(rows: list[TraceRequest], source: str, block_tokens: int) -> Trace:
    if not rows:
        raise TraceError(f"{source}: no requests")
    rows.sort(key=lambda r: r.arrival_s)
    t0 = rows[0].arrival_s
    return Trace(
        requests=tuple(dataclasses.replace(r, arrival_s=r.arrival_s - t0) for r in rows),
        source=source,
        block_tokens=block_tokens,
    )


def _tokens(value: object, what: str, where: str) -> int:
    """A token count: a finite, non-negative number of at most ``MAX_TOKENS`` (decimals cut)."""
    if isinstance(value, bool):
        raise TraceError(f"{where}: {what} {value!r} is not a number")
    try:
        n = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise TraceError(f"{where}: {what} {value!r} is not a number") from exc
    if not math.isfinite(n):
        raise TraceError(f"{where}: {what} {value!r} is not a finite number")
    if n < 0:
        raise TraceError(f"{where}: {what} {value!r} is negative")
    if n > MAX_TOKENS:
        raise TraceError(
            f"{where}: {what} {value!r} is above {MAX_TOKENS:,} tokens, longer than any "
            "model's context; drop or fix the row"
        )
    return int(n)


def _arrival(seconds: float, text: object, where: str) -> float:
    """An arrival time that is a finite number of seconds."""
    if not math.isfinite(seconds):
        raise TraceError(f"{where}: the arrival {text!r} is not a finite time")
    return seconds


def parse_csv(
    text: str,
    arrival: str,
    input_col: str,
    output_col: str,
    arrival_unit: Literal["s", "ms"] = "s",
    source: str = "csv",
) -> Trace:
    """A CSV with a header; the three named columns are arrival, input and output tokens. An
    optional ``priority`` column (an integer: the request's class's InferenceObjective
    priority, ``spec.workload.classes``) is read when present."""
    reader = csv.DictReader(io.StringIO(text))
    fields = reader.fieldnames or []
    for col in (arrival, input_col, output_col):
        if col not in fields:
            raise TraceError(
                f"{source}: no column {col!r} (columns: {', '.join(fields)}); "
                "map them with --columns arrival=COL,input=COL,output=COL"
            )
    unit_s = 1e-3 if arrival_unit == "ms" else 1.0
    rows: list[TraceRequest] = []
    for i, rec in enumerate(reader, start=2):
        rows.append(
            TraceRequest(
                arrival_s=_arrival(
                    _parse_time(rec[arrival] or "", unit_s, f"line {i}, column {arrival}"),
                    rec[arrival],
                    f"line {i}, column {arrival}",
                ),
                input_tokens=_tokens(rec[input_col] or "", input_col, f"line {i}"),
                output_tokens=_tokens(rec[output_col] or "", output_col, f"line {i}"),
                priority=_priority(rec.get("priority"), f"line {i}"),
            )
        )
    return _rebased(rows, source, MOONCAKE_BLOCK_TOKENS)


def _priority(text: str | None, where: str) -> int:
    """The optional ``priority`` column: an integer, absent or empty: 0."""
    if text is None or not text.strip():
        return 0
    try:
        return int(text)
    except ValueError as exc:
        raise TraceError(f"{where}, column 'priority': {text!r} is not an integer") from exc


def parse_azure(text: str, source: str = "azure") -> Trace:
    return parse_csv(text, "TIMESTAMP", "ContextTokens", "GeneratedTokens", "s", source)


def parse_mooncake(text: str, source: str = "mooncake") -> Trace:
    rows: list[TraceRequest] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source} line {i}"
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise TypeError(f"a JSON {type(rec).__name__}, not an object")
            stamp_ms = rec["timestamp"]
            hashes = rec.get("hash_ids", ())
            if not isinstance(hashes, list | tuple):
                raise TypeError(f"hash_ids {hashes!r} is not a list")
            prefix_blocks = tuple(int(h) for h in hashes)
            input_raw, output_raw = rec["input_length"], rec["output_length"]
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            raise TraceError(
                f"{where}: expected JSON with timestamp (ms), input_length, "
                f"output_length[, hash_ids]: {exc}"
            ) from exc
        if isinstance(stamp_ms, bool) or not isinstance(stamp_ms, int | float | str):
            raise TraceError(f"{where}: timestamp {stamp_ms!r} is not a number of ms")
        try:
            arrival_s = float(stamp_ms) / 1000.0
        except ValueError as exc:
            raise TraceError(f"{where}: timestamp {stamp_ms!r} is not a number of ms") from exc
        rows.append(
            TraceRequest(
                arrival_s=_arrival(arrival_s, stamp_ms, where),
                input_tokens=_tokens(input_raw, "input_length", where),
                output_tokens=_tokens(output_raw, "output_length", where),
                prefix_blocks=prefix_blocks,
            )
        )
    return _rebased(rows, source, MOONCAKE_BLOCK_TOKENS)


def detect_format(text: str) -> Literal["azure", "mooncake", "csv"]:
    first = text.lstrip().split("\n", 1)[0]
    if first.startswith("{"):
        return "mooncake"
    if {"TIMESTAMP", "ContextTokens", "GeneratedTokens"} <= {c.strip() for c in first.split(",")}:
        return "azure"
    return "csv"


def parse_trace(
    text: str,
    fmt: TraceFormat = "auto",
    columns: dict[str, str] | None = None,
    arrival_unit: Literal["s", "ms"] = "s",
    source: str = "trace",
) -> Trace:
    kind = detect_format(text) if fmt == "auto" else fmt
    if kind == "mooncake":
        return parse_mooncake(text, source)
    if kind == "azure" and not columns:
        return parse_azure(text, source)
    cols = columns or {}
    missing = [k for k in ("arrival", "input", "output") if k not in cols]
    if missing:
        raise TraceError(
            f"{source}: not an Azure or Mooncake trace; name the columns with "
            f"--columns arrival=COL,input=COL,output=COL (missing: {', '.join(missing)})"
        )
    return parse_csv(text, cols["arrival"], cols["input"], cols["output"], arrival_unit, source)


def scale_trace(
    trace: Trace, time_scale: float = 1.0, rate_scale: float = 1.0, seed: int = 0
) -> Trace:
    """Stretch time by ``time_scale``, then multiply the arrival rate by ``rate_scale``.

    Rate scaling keeps the trace's shape in time: each request is kept ``floor(k)`` times plus
    once more with probability ``frac(k)`` (so ``k < 1`` thins the trace), copies arriving
    uniformly within ±0.5 s of the original — a superposition of ``k`` similar users.
    """
    if time_scale <= 0 or rate_scale <= 0:
        raise TraceError("--time-scale and --rate-scale must be > 0")
    rng = random.Random(seed)
    whole, frac = int(rate_scale), rate_scale - int(rate_scale)
    rows: list[TraceRequest] = []
    for r in trace.requests:
        copies = whole + (1 if rng.random() < frac else 0)
        t = r.arrival_s * time_scale
        for c in range(copies):
            jitter = 0.0 if c == 0 else rng.uniform(-0.5, 0.5)
            rows.append(dataclasses.replace(r, arrival_s=max(0.0, t + jitter)))
    if not rows:
        raise TraceError(f"--rate-scale {rate_scale} left no requests")
    rows.sort(key=lambda r: r.arrival_s)
    return Trace(tuple(rows), trace.source, trace.block_tokens)


def window_rates(trace: Trace, window_s: float) -> list[float]:
    """Arrivals per second in consecutive ``window_s`` windows from 0."""
    bins = max(1, math.ceil((trace.duration_s + 1e-9) / window_s))
    counts = [0] * bins
    for r in trace.requests:
        counts[min(bins - 1, int(r.arrival_s // window_s))] += 1
    return [c / window_s for c in counts]


def trace_stats(trace: Trace, peak_window_s: float = 60.0) -> TraceStats:
    ins = sorted(float(r.input_tokens) for r in trace.requests)
    outs = sorted(float(r.output_tokens) for r in trace.requests)
    n = len(trace.requests)
    duration = max(trace.duration_s, 1e-9)
    return TraceStats(
        requests=n,
        duration_s=trace.duration_s,
        mean_rps=n / duration,
        peak_rps=max(window_rates(trace, peak_window_s)),
        peak_window_s=peak_window_s,
        input_mean=sum(ins) / n,
        input_p95=_percentile(ins, 0.95),
        input_p99=_percentile(ins, 0.99),
        output_mean=sum(outs) / n,
        output_p95=_percentile(outs, 0.95),
        output_p99=_percentile(outs, 0.99),
    )


def synthetic_trace(
    duration_s: float,
    rps: float | Callable[[float], float],
    input_tokens: Callable[[random.Random], int],
    output_tokens: Callable[[random.Random], int],
    seed: int = 0,
    shared_prefix_blocks: int = 0,
    prefix_groups: int = 1,
) -> Trace:
    """Poisson arrivals at ``rps`` (constant or a function of time, by thinning).

    With ``shared_prefix_blocks`` every prompt starts with that many 512-token blocks shared
    by one of ``prefix_groups`` groups (a system prompt / few-shot header), the rest unique.
    """
    rng = random.Random(seed)
    rate = rps if callable(rps) else (lambda _t, c=float(rps): c)
    peak = max(rate(duration_s * i / 200.0) for i in range(201))
    if peak <= 0:
        raise TraceError("synthetic trace: the rate must be > 0 somewhere")
    rows: list[TraceRequest] = []
    t, uid = 0.0, 1 << 40
    while True:
        t += rng.expovariate(peak)
        if t > duration_s:
            break
        if rng.random() * peak > rate(t):
            continue
        n_in, n_out = max(1, input_tokens(rng)), max(1, output_tokens(rng))
        blocks: tuple[int, ...] = ()
        if shared_prefix_blocks:
            group = rng.randrange(prefix_groups)
            shared = tuple(group * 1000 + b for b in range(shared_prefix_blocks))
            own = n_in // MOONCAKE_BLOCK_TOKENS - shared_prefix_blocks
            blocks = shared + tuple(uid + b for b in range(max(0, own)))
            uid += max(0, own) + 1
        rows.append(TraceRequest(t, n_in, n_out, blocks))
    return _rebased(rows, "synthetic", MOONCAKE_BLOCK_TOKENS) if rows else Trace((), "synthetic")
