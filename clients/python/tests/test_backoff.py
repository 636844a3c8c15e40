from wsps.backoff import Retry, backoff_delay


def test_backoff_delay_is_equal_jitter_and_capped() -> None:
    assert backoff_delay(0, 0.5, 30, lambda: 0) == 0.25
    assert backoff_delay(0, 0.5, 30, lambda: 1) == 0.5
    assert backoff_delay(3, 0.5, 30, lambda: 1) == 4.0
    assert backoff_delay(50, 0.5, 30, lambda: 1) == 30


def test_1012_is_jitter_only_and_does_not_count() -> None:
    r = Retry(["a", "b"], restart_jitter=0.5, random=lambda: 0.5)
    assert r.next(1012) == 0.25 and r.attempt == 0 and r.url == "b"
    assert r.next(1006) == 0.375 and r.attempt == 1 and r.url == "a"


def test_stable_connection_resets_attempts() -> None:
    now = [0.0]
    r = Retry(["a"], stable=5, random=lambda: 1, clock=lambda: now[0])
    r.next(1006)
    r.next(1006)
    assert r.attempt == 2
    r.live()
    now[0] = 10
    assert r.next(1006) == 0.5 and r.attempt == 1
