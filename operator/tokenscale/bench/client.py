"""Streaming requests to an OpenAI-compatible endpoint (vLLM's ``/v1/completions``).

Each request asks for exactly ``max_tokens`` (``ignore_eos``, which vLLM honours; servers that
do not may stop early and the record keeps what came back) and streams Server-Sent Events:
``data: {json}`` chunks, then ``data: [DONE]``; with ``stream_options.include_usage`` the last
chunk carries ``usage.prompt_tokens`` / ``completion_tokens`` (and no choices). TTFT is the
first chunk with a choice — vLLM sends one per engine step even when detokenization holds the
text back (a real engine showed 55 ms of empty first chunks) — ITLs the gaps between later
ones, E2E the ``[DONE]``.

Prompts are built to a token count with the server's ``/tokenize`` where it exists (vLLM),
otherwise from one probe's ``usage.prompt_tokens``; each request starts with a unique tag so
the prefix cache cannot serve one request from another.
"""

import asyncio
import json
import math
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from tokenscale.api.base import MAX_TOKENS
from tokenscale.bench.analysis import RequestRecord

WORD = " hello"


@dataclass
class Endpoint:
    url: str
    model: str
    timeout_s: float
    tokens_per_word: float = 1.0
    overhead_tokens: float = 0.0
    """Tokens a prompt costs beyond its words: the tag, BOS and the like."""
    max_model_len: int | None = None

    def prompt(self, tokens: int, tag: int) -> str:
        words = max(1, round((tokens - self.overhead_tokens) / self.tokens_per_word))
        return _tag(tag) + WORD * words


def _tag(tag: int) -> str:
    return f"[{tag:08d}]"


async def _count(session: aiohttp.ClientSession, ep: Endpoint, text: str) -> tuple[int, bool]:
    """Prompt tokens of ``text``: ``/tokenize`` if served, else a one-token request's usage."""
    try:
        async with session.post(
            f"{ep.url}/tokenize",
            json={"model": ep.model, "prompt": text},
            timeout=aiohttp.ClientTimeout(total=ep.timeout_s),
        ) as resp:
            if resp.status == 200:
                body = await resp.json()
                ep.max_model_len = _positive_int(body.get("max_model_len")) or ep.max_model_len
                raw = body.get("count")
                count = token_count(raw if raw is not None else len(body.get("tokens", [])))
                if count is not None:  # else an absurd count: measure from usage instead
                    return count, True
    except (aiohttp.ClientError, TimeoutError, ValueError, TypeError, AttributeError):
        pass
    record = await stream_one(session, ep, 0, 1, tag=0, prompt=text)
    return (record.input_tokens if record.ok else 0), False


def token_count(value: object, most: float = MAX_TOKENS) -> int | None:
    """``value`` as a token count when it is a whole number in ``[0, most]`` (JSON's 1e400
    reads as Inf, which is not one), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= most:
        return None
    return int(value)


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class EndpointError(Exception):
    """The endpoint cannot be benchmarked as asked; the message says why and what to change.

    ``bad_input`` is True when an option is at fault (exit 2), False when the server is
    (unreachable, failing: exit 1).
    """

    def __init__(self, message: str, *, bad_input: bool) -> None:
        super().__init__(message)
        self.bad_input = bad_input


async def served_models(session: aiohttp.ClientSession, ep: Endpoint) -> dict[str, int | None]:
    """``GET /v1/models``: each served model and its ``max_model_len`` (vLLM reports it).

    Raises :class:`EndpointError` when nothing answers at the URL; an answer that is not the
    OpenAI model list (another server, an old one) gives an empty dict.
    """
    try:
        async with session.get(
            f"{ep.url}/v1/models", timeout=aiohttp.ClientTimeout(total=ep.timeout_s)
        ) as resp:
            if resp.status != 200:
                return {}
            body = await resp.json(content_type=None)
    except TimeoutError as exc:
        raise EndpointError(
            f"{ep.url}/v1/models did not answer within --timeout {ep.timeout_s:g} s",
            bad_input=False,
        ) from exc
    except aiohttp.ClientConnectionError as exc:
        raise EndpointError(f"cannot reach {ep.url}: {exc}", bad_input=False) from exc
    except (aiohttp.ClientError, ValueError):
        return {}
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return {}
    return {
        str(m["id"]): _positive_int(m.get("max_model_len"))
        for m in data
        if isinstance(m, dict) and "id" in m
    }


async def probe(session: aiohttp.ClientSession, ep: Endpoint) -> list[str]:
    """Fit ``tokens = overhead + rate × words`` from two prompt sizes, so prompts come out at
    the asked length (exactly, for a tokenizer that is linear in the filler word)."""
    c1, exact = await _count(session, ep, _tag(1) + WORD * 500)
    c2, _ = await _count(session, ep, _tag(1) + WORD * 1000)
    if c2 <= c1:
        return ["the prompt length could not be measured: assuming one token per word"]
    ep.tokens_per_word = (c2 - c1) / 500
    ep.overhead_tokens = c1 - 500 * ep.tokens_per_word
    if exact:
        return []
    return [
        f"no /tokenize: prompt lengths calibrated from usage ({ep.tokens_per_word:.2f} tokens "
        f"per word, {ep.overhead_tokens:.0f} extra)"
    ]


def _read_usage(
    rec: RequestRecord, usage: Any, input_tokens: int, output_tokens: int, chunks: int
) -> str | None:
    """Take the token counts of ``usage`` into ``rec``; the reason when they are not counts
    this request could have (negative, not whole, Inf, or more output than was asked)."""
    if not isinstance(usage, dict):
        return f"usage is not an object: {str(usage)[:60]}"
    prompt = token_count(usage.get("prompt_tokens", input_tokens))
    completion = token_count(usage.get("completion_tokens", chunks), most=max(output_tokens, 1))
    if prompt is None:
        return f"usage.prompt_tokens={usage.get('prompt_tokens')!r} is not a plausible count"
    if completion is None:
        return (
            f"usage.completion_tokens={usage.get('completion_tokens')!r} is not a plausible "
            f"count (asked for {output_tokens})"
        )
    rec.input_tokens, rec.output_tokens = prompt, completion
    return None


async def stream_one(
    session: aiohttp.ClientSession,
    ep: Endpoint,
    input_tokens: int,
    output_tokens: int,
    tag: int,
    prompt: str | None = None,
) -> RequestRecord:
    """One streamed completion; never raises (errors and timeouts go in the record)."""
    rec = RequestRecord(input_tokens=input_tokens)
    payload = {
        "model": ep.model,
        "prompt": prompt if prompt is not None else ep.prompt(input_tokens, tag),
        "max_tokens": output_tokens,
        "min_tokens": output_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    start = time.perf_counter()
    last: float | None = None
    chunks = 0
    try:
        async with asyncio.timeout(ep.timeout_s):
            async with session.post(f"{ep.url}/v1/completions", json=payload) as resp:
                if resp.status != 200:
                    rec.error = f"HTTP {resp.status}: {(await resp.text())[:200]}"
                    return rec
                async for raw in resp.content:
                    line = raw.strip()
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        rec.e2e_s = time.perf_counter() - start
                        break
                    now = time.perf_counter()
                    chunk = json.loads(data)
                    if chunk.get("error"):
                        rec.error = str(chunk["error"])[:200]
                        return rec
                    usage = chunk.get("usage")
                    if usage:
                        problem = _read_usage(rec, usage, input_tokens, output_tokens, chunks)
                        if problem is not None:
                            rec.error = problem
                            return rec
                    if chunk.get("choices"):  # one per engine step, text or not yet
                        chunks += 1
                        if last is None:
                            rec.ttft_s = now - start
                        else:
                            rec.itls_s.append(now - last)
                        last = now
                if rec.e2e_s is None:
                    rec.error = "stream ended before [DONE]"
                elif rec.output_tokens == 0:
                    rec.output_tokens = chunks
    except TimeoutError:
        rec.timed_out = True
    except (aiohttp.ClientError, ValueError, ConnectionError, OverflowError) as exc:
        rec.error = f"{type(exc).__name__}: {exc}"[:200]
    except (TypeError, AttributeError, KeyError) as exc:  # a chunk not shaped like OpenAI's
        rec.error = f"unexpected stream chunk ({type(exc).__name__}: {exc})"[:200]
    return rec
