"""The pacer: worker threads give way to a busy event loop, never wait when nothing beats, never starve."""

from __future__ import annotations

import threading

from hermit_tui.dashboard.app import BEAT_S, HermitApp, Pacer


class FakeClock:
    """Stands in for the time module inside hermit_tui.dashboard.support: sleeping advances the clock; ``on_sleep``
    may beat."""

    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []
        self.on_sleep = None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep()


def test_pace_is_free_without_a_beat_waits_while_the_beat_is_late_and_never_longer_than_most_s(monkeypatch):
    import hermit_tui.dashboard.support as app_module

    clock = FakeClock()
    monkeypatch.setattr(app_module, "time", clock)
    pacer = Pacer(most_s=0.2)
    clock.now += 10  # the last beat is long gone, but no paced worker is alive: no wait
    pacer.pace()
    assert clock.slept == []
    pacer.active = True
    pacer.tick()
    clock.now += BEAT_S  # the loop beat a beat ago: go on
    pacer.pace()
    assert clock.slept == []
    clock.now += 1  # the loop is busy: wait until it beats again...
    clock.on_sleep = lambda: pacer.tick() if len(clock.slept) == 5 else None
    pacer.pace()
    assert len(clock.slept) == 5
    clock.slept.clear()
    clock.on_sleep = None
    clock.now += 1  # ...and nobody beats: at most most_s
    pacer.pace()
    assert 0.2 <= sum(clock.slept) <= 0.2 + 0.002 + 1e-9


async def test_the_loop_beats_while_a_paced_worker_lives_and_stops_after(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path))
    app = HermitApp(None)
    release = threading.Event()
    async with app.run_test() as pilot:
        assert app.pacer.active is False
        beats_before = app.pacer.beat
        worker = app.paced_worker(app, lambda: release.wait(5), name="test-paced")
        await pilot.pause(10 * BEAT_S)
        assert app.pacer.active is True and app.pacer.beat > beats_before  # beating
        release.set()
        await worker.wait()
        await pilot.pause(5 * BEAT_S)
        assert app.pacer.active is False and app._beat is None  # stopped with the last paced worker
