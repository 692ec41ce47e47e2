"""Long runs resume (attnbook/experiments/_tasks.py): the finished tasks of an interrupted grid
and the finished phases of an interrupted run of several are kept in the task cache, a rerun
does only the rest, says how many it reused, and stores the same run as an uninterrupted one;
attnlib's training loop and samplers attach the run so far to Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import resume_fixture as fixture
from attnbook import experiments
from attnbook.experiments import __main__ as cli
from attnbook.experiments._tasks import TaskCache


@pytest.fixture(autouse=True)
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary store and task cache, and a fresh record of what ran."""
    monkeypatch.setattr(experiments, "STORED_DIR", tmp_path / "stored")
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    fixture.RAN.clear()
    fixture.INTERRUPT[0] = None
    return tmp_path


def _identical(first: dict, second: dict) -> bool:
    return first.keys() == second.keys() and all(
        np.asarray(first[k]).dtype == np.asarray(second[k]).dtype
        and np.array_equal(first[k], second[k]) for k in first)


def test_an_interrupted_grid_resumes_with_only_the_tasks_left(
        sandbox: Path, capsys: pytest.CaptureFixture) -> None:
    uninterrupted = experiments.run("resume_grid")             # no cache: nothing kept
    assert not (sandbox / "cache").exists()
    fixture.RAN.clear()
    fixture.INTERRUPT[0] = ("task", 3)                         # Ctrl-C as task 3 starts
    assert cli.main(["resume_grid"]) == 130
    err = capsys.readouterr().err
    assert "interrupted: resume_grid was not saved" in err and "a rerun resumes" in err
    assert fixture.RAN == [("task", 0), ("task", 1), ("task", 2)]
    fixture.RAN.clear()
    assert cli.main(["resume_grid"]) == 0
    assert "resume_grid: reused 3 of 6 tasks finished before" in capsys.readouterr().err
    assert fixture.RAN == [("task", 3), ("task", 4), ("task", 5)]
    assert _identical(experiments.load("resume_grid"), uninterrupted)
    assert not experiments.task_cache("resume_grid").folder.exists()   # deleted once saved


def test_an_interrupted_two_phase_run_resumes_after_its_finished_phases(
        capsys: pytest.CaptureFixture) -> None:
    uninterrupted = experiments.run("resume_phases")
    fixture.RAN.clear()
    fixture.INTERRUPT[0] = ("phase 2", 1)                      # half way through phase 2
    assert cli.main(["resume_phases"]) == 130
    assert fixture.RAN == [("phase 1",), ("phase 2", 0)]
    fixture.RAN.clear()
    capsys.readouterr()
    assert cli.main(["resume_phases"]) == 0
    assert fixture.RAN == [("phase 2", 1), ("phase 2", 2)]     # phase 1 and step 0 reused
    assert "reused the finished step 'phase 1'" in capsys.readouterr().err
    assert _identical(experiments.load("resume_phases"), uninterrupted)


def test_fresh_starts_over_and_other_settings_or_code_are_never_reused() -> None:
    fixture.INTERRUPT[0] = ("task", 2)
    assert cli.main(["resume_grid"]) == 130
    fixture.RAN.clear()
    assert cli.main(["resume_grid", "--fresh"]) == 0
    assert fixture.RAN == [("task", i) for i in range(6)]
    cache = TaskCache("resume_grid", "settings A")
    key = cache.key("task", fixture.grid_task, (1,))
    cache.put(key, {"walk": np.arange(3.0), "end": np.float64(2.0), "length": 3})
    kept = cache.get(key)
    assert type(kept["end"]) is np.float64 and type(kept["length"]) is int
    assert TaskCache("resume_grid", "settings B").get(
        TaskCache("resume_grid", "settings B").key("task", fixture.grid_task, (1,))) is None
    assert cache.key("task", lambda: None, (1,)) is None       # cannot be pickled: not kept


def test_a_darcy_run_of_two_phases_resumes_bit_for_bit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from attnbook.experiments import darcy_runs

    uninterrupted = experiments.run("darcy_large", full=False)
    calls: list[str] = []
    interrupt = ["log"]
    phase1, phase2 = darcy_runs._phase1_experiment, darcy_runs.phase2_task

    def counted_phase1(*args, **kwargs):
        calls.append("phase 1")
        return phase1(*args, **kwargs)

    def interrupted_phase2(task, start, spec, **kwargs):
        calls.append(spec.regime)
        if spec.regime in interrupt:
            interrupt.clear()
            raise KeyboardInterrupt                            # Ctrl-C in phase 2, once
        return phase2(task, start, spec, **kwargs)

    monkeypatch.setattr(darcy_runs, "_phase1_experiment", counted_phase1)
    monkeypatch.setattr(darcy_runs, "phase2_task", interrupted_phase2)
    with pytest.raises(KeyboardInterrupt):
        experiments.run("darcy_large", full=False, resume=True)
    assert calls == ["phase 1", "none", "log"]
    calls.clear()
    resumed = experiments.run("darcy_large", full=False, resume=True)
    assert calls == ["log", "power"]                           # phase 1 and "none" reused
    assert _identical(resumed, uninterrupted)


def test_ctrl_c_in_training_and_sampling_carries_the_run_so_far() -> None:
    from attnlib import algorithm, data, langevin, potentials

    rng = np.random.default_rng(0)
    X, Y = data.default_problem(rng=rng, d=3, p=4).sample(50, rng=rng)

    def stop_at_40(k: int, a: np.ndarray, b: np.ndarray) -> None:
        if k == 40:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as caught:
        algorithm.train(algorithm.empirical_loss(X, Y), iterations=100, callback=stop_at_40)
    result = caught.value.result
    assert isinstance(result, algorithm.TrainResult) and result.stopped
    assert result.history["iteration"].tolist() == list(range(41))
    assert all(len(values) == 41 for values in result.history.values())
    assert caught.value.history is result.history

    for sampler in (langevin.euler_maruyama, langevin.mala):
        calls = [0]

        def interrupted(theta: np.ndarray):
            calls[0] += 1
            if calls[0] == 25:
                raise KeyboardInterrupt
            return potentials.quadratic(theta)

        with pytest.raises(KeyboardInterrupt) as caught:
            sampler(interrupted, np.zeros((4, 1)), step=0.05, temperature=1.0, n_steps=100,
                    record_every=10, rng=np.random.default_rng(0))
        history = caught.value.history
        assert history["loss"].shape[0] == history["times"].shape[0] >= 2, sampler.__name__
        assert np.isfinite(history["loss"]).all()
