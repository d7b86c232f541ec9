"""with_retries: backoff with full jitter, retry_after, exhaustion, determinism."""

from __future__ import annotations

import random

import pytest

from dabench.providers import ProviderError, RetryPolicy, with_retries
from dabench.providers.http_errors import parse_retry_after, status_error


class Flaky:
    """Fails with the given errors, then returns "ok"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def retryable(retry_after: float | None = None) -> ProviderError:
    return ProviderError("busy", retryable=True, retry_after=retry_after)


async def test_success_after_retryable_errors() -> None:
    call, sleep = Flaky(retryable(), retryable()), Sleeps()
    assert await with_retries(call, RetryPolicy(max_attempts=3), sleep=sleep) == "ok"
    assert call.calls == 3
    assert len(sleep.delays) == 2


async def test_exhaustion_reraises_the_last_error() -> None:
    last = ProviderError("third", retryable=True)
    call, sleep = Flaky(retryable(), retryable(), last), Sleeps()
    with pytest.raises(ProviderError) as info:
        await with_retries(call, RetryPolicy(max_attempts=3), sleep=sleep)
    assert info.value is last
    assert call.calls == 3


async def test_non_retryable_and_foreign_errors_propagate_at_once() -> None:
    for error in (ProviderError("bad request", retryable=False), ValueError("bug")):
        call, sleep = Flaky(error), Sleeps()
        with pytest.raises(type(error)):
            await with_retries(call, RetryPolicy(max_attempts=5), sleep=sleep)
        assert call.calls == 1
        assert sleep.delays == []


async def test_exponential_caps_without_jitter() -> None:
    call, sleep = Flaky(*[retryable() for _ in range(5)]), Sleeps()
    policy = RetryPolicy(max_attempts=6, base_delay=0.5, max_delay=3.0, jitter=False)
    await with_retries(call, policy, sleep=sleep)
    assert sleep.delays == [0.5, 1.0, 2.0, 3.0, 3.0]


async def test_full_jitter_is_bounded_and_deterministic_given_the_rng() -> None:
    policy = RetryPolicy(max_attempts=6, base_delay=1.0, max_delay=8.0)
    runs = []
    for _ in range(2):
        sleep = Sleeps()
        await with_retries(
            Flaky(*[retryable() for _ in range(5)]), policy, sleep=sleep, rng=random.Random(42)
        )
        runs.append(sleep.delays)
    assert runs[0] == runs[1]
    caps = [1.0, 2.0, 4.0, 8.0, 8.0]
    assert all(0.0 <= d <= cap for d, cap in zip(runs[0], caps, strict=True))
    other = Sleeps()
    await with_retries(
        Flaky(*[retryable() for _ in range(5)]), policy, sleep=other, rng=random.Random(7)
    )
    assert other.delays != runs[0]


async def test_retry_after_is_a_floor_even_above_max_delay() -> None:
    call, sleep = Flaky(retryable(retry_after=12.0), retryable(retry_after=0.0)), Sleeps()
    policy = RetryPolicy(max_attempts=3, base_delay=1.0, max_delay=2.0, jitter=False)
    await with_retries(call, policy, sleep=sleep)
    assert sleep.delays == [12.0, 2.0]


async def test_on_retry_hook_sees_attempts_errors_and_delays() -> None:
    seen: list[tuple[int, str, float]] = []
    first, second = ProviderError("a", retryable=True), ProviderError("b", retryable=True)
    await with_retries(
        Flaky(first, second),
        RetryPolicy(max_attempts=3, base_delay=1.0, jitter=False),
        sleep=Sleeps(),
        on_retry=lambda attempt, error, delay: seen.append((attempt, str(error), delay)),
    )
    assert seen == [(1, "a", 1.0), (2, "b", 2.0)]


async def test_single_attempt_policy_never_retries() -> None:
    call = Flaky(retryable())
    with pytest.raises(ProviderError):
        await with_retries(call, RetryPolicy(max_attempts=1), sleep=Sleeps())
    assert call.calls == 1


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay=-1)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after": "Tue, 14 Nov 2023 22:13:40 GMT"}, now=now) == 20.0


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (403, False), (404, False), (422, False), (408, True),
     (409, True), (429, True), (500, True), (502, True), (503, True), (529, True)],
)  # fmt: skip
def test_status_classification(status: int, retryable: bool) -> None:
    error = status_error("x", status, "m", {"retry-after": "4"})
    assert error.retryable is retryable
    assert error.retry_after == (4.0 if retryable else None)
