"""The run engine: JSONL results as items finish, resume after a kill, errors, timeouts, Ray."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tooluse.evals.engine import EngineError, WorkItem, read_results, run_items


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def doubling_worker():
    def work(item: WorkItem) -> dict:
        if item.payload == "boom":
            raise ValueError("boom on purpose")
        return {"value": item.payload * 2}

    return work


def items(n: int) -> list[WorkItem]:
    return [WorkItem(key=f"k{i}", payload=i) for i in range(n)]


# -- local engine -------------------------------------------------------------------------------


def test_every_item_gets_one_line_and_records_come_back_in_item_order(tmp_path):
    out = tmp_path / "results.jsonl"
    run = run_items(items(12), doubling_worker, out, concurrency=3, progress=False)
    assert [r["key"] for r in run.records] == [f"k{i}" for i in range(12)]
    assert [r["value"] for r in run.records] == [2 * i for i in range(12)]
    assert (run.ran, run.skipped, run.failed) == (12, 0, 0)
    written = lines(out)
    assert sorted(r["key"] for r in written) == sorted(f"k{i}" for i in range(12))
    assert run.items_per_minute > 0


def test_resume_skips_finished_items_and_runs_only_the_rest(tmp_path):
    out = tmp_path / "results.jsonl"
    calls: list[str] = []

    def factory():
        def work(item):
            calls.append(item.key)
            return {"value": item.payload}

        return work

    first = run_items(items(5), factory, out, progress=False)
    assert first.ran == 5
    second = run_items(items(9), factory, out, progress=False)
    assert (second.ran, second.skipped) == (4, 5)
    assert calls == [f"k{i}" for i in range(9)]  # none run twice
    assert [r["value"] for r in second.records] == list(range(9))
    assert len(lines(out)) == 9


def test_a_half_written_last_line_is_dropped_and_its_item_redone(tmp_path):
    out = tmp_path / "results.jsonl"
    run_items(items(3), doubling_worker, out, progress=False)
    with out.open("a") as handle:
        handle.write('{"key": "k3", "val')  # the process died in the middle of this write
    run = run_items(items(5), doubling_worker, out, progress=False)
    assert (run.ran, run.skipped) == (2, 3)
    written = lines(out)  # every line parses: the cut line is gone
    assert sorted(r["key"] for r in written) == [f"k{i}" for i in range(5)]
    assert [r["value"] for r in run.records] == [0, 2, 4, 6, 8]


def test_a_corrupt_line_in_the_middle_is_a_clear_error_and_nothing_is_lost(tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text('{"key": "k0", "value": 0}\nnot json at all\n{"key": "k2", "value": 4}\n')
    before = out.read_text()
    with pytest.raises(EngineError, match=r"line 2 is corrupt"):
        run_items(items(3), doubling_worker, out, progress=False)
    assert out.read_text() == before
    out.write_text('{"value": 0}\n')
    with pytest.raises(EngineError, match=r"line 1 is not a record with a string 'key'"):
        read_results(out)


def test_a_raising_worker_gives_an_error_record_and_the_run_goes_on(tmp_path):
    work = [
        WorkItem(key="a", payload=1),
        WorkItem(key="b", payload="boom"),
        WorkItem(key="c", payload=3),
    ]
    run = run_items(work, doubling_worker, tmp_path / "r.jsonl", progress=False)
    assert run.failed == 1
    by_key = {r["key"]: r for r in run.records}
    assert by_key["b"]["error"] == "ValueError: boom on purpose"
    assert by_key["b"]["error_kind"] == "exception"
    assert by_key["a"]["value"] == 2 and by_key["c"]["value"] == 6
    # by default a resumed run keeps the error; retry_errors runs it again
    again = run_items(work, doubling_worker, tmp_path / "r.jsonl", progress=False)
    assert again.ran == 0
    fixed = run_items(
        [WorkItem(key="b", payload=5)],
        doubling_worker,
        tmp_path / "r.jsonl",
        progress=False,
        retry_errors=True,
    )
    assert fixed.ran == 1 and fixed.records[0]["value"] == 10 and fixed.failed == 0


def test_a_slow_item_times_out_and_a_fresh_worker_takes_the_next(tmp_path):
    made: list[int] = []
    release = threading.Event()

    def factory():
        made.append(1)

        def work(item):
            if item.payload == "hang":
                release.wait(10)
            return {"value": item.payload}

        return work

    work = [
        WorkItem(key="a", payload=1),
        WorkItem(key="b", payload="hang"),
        WorkItem(key="c", payload=3),
    ]
    try:
        run = run_items(work, factory, tmp_path / "r.jsonl", progress=False, item_timeout=0.3)
    finally:
        release.set()
    by_key = {r["key"]: r for r in run.records}
    assert by_key["b"]["error_kind"] == "timeout"
    assert "no result after 0.3 s" in by_key["b"]["error"]
    assert by_key["c"]["value"] == 3
    assert len(made) == 2  # the hung worker was not reused


def test_the_factory_runs_once_per_worker_thread(tmp_path):
    made: list[str] = []
    lock = threading.Lock()
    later_two = threading.Barrier(2)

    def factory():
        with lock:
            made.append(threading.current_thread().name)
            first = len(made) == 1
        if not first:  # the first worker is made alone, the others at once
            later_two.wait(timeout=10)

        def work(item):
            time.sleep(0.05)  # busy long enough that each thread needs a worker of its own
            return {"thread": threading.current_thread().name}

        return work

    run = run_items(items(20), factory, tmp_path / "r.jsonl", concurrency=3, progress=False)
    assert len(made) == 3 == len(set(made))
    assert {r["thread"] for r in run.records} <= set(made)


def test_a_worker_taking_several_items_serves_that_many_threads(tmp_path):
    made: list[object] = []
    running: dict[int, int] = {}
    most: dict[int, int] = {}
    lock = threading.Lock()
    four_at_once = threading.Barrier(4)

    class Batched:
        concurrency = 4  # its model decodes four requests together

        def __call__(self, item):
            with lock:
                running[id(self)] = running.get(id(self), 0) + 1
                most[id(self)] = max(most.get(id(self), 0), running[id(self)])
            if item.payload < 4:
                four_at_once.wait(timeout=10)  # the first four run on it together
            time.sleep(0.01)
            with lock:
                running[id(self)] -= 1
            return {"worker": id(self)}

    def factory():
        made.append(1)
        return Batched()

    run = run_items(items(24), factory, tmp_path / "r.jsonl", concurrency=8, progress=False)
    assert run.failed == 0 and len(run.records) == 24
    assert len(made) == 2  # eight threads, four items per worker: two workers, not eight
    assert max(most.values()) == 4 and all(m <= 4 for m in most.values())


def test_bad_input_is_refused_before_any_work(tmp_path):
    out = tmp_path / "r.jsonl"
    with pytest.raises(EngineError, match="duplicate item keys: x"):
        run_items([WorkItem(key="x", payload=1)] * 2, doubling_worker, out, progress=False)
    with pytest.raises(EngineError, match="unknown engine"):
        run_items(items(1), doubling_worker, out, engine="spark", progress=False)  # type: ignore[arg-type]
    assert not out.exists()

    def broken():
        raise RuntimeError("model file missing")

    with pytest.raises(EngineError, match="worker factory failed: RuntimeError: model file"):
        run_items(items(2), broken, out, progress=False)


def test_progress_bar_reports_accuracy_so_far(tmp_path, capsys):
    run_items(
        items(4),
        doubling_worker,
        tmp_path / "r.jsonl",
        progress=True,
        description="demo",
        score=lambda r: r["value"] % 4 == 0,
    )
    err = capsys.readouterr().err
    assert "demo" in err and "4/4" in err and "acc 50.0%" in err


# -- a real process killed with SIGKILL ---------------------------------------------------------

KILLED_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from tooluse.evals.engine import WorkItem, run_items

    def factory():
        def work(item):
            time.sleep(0.02)
            return {"value": item.payload}
        return work

    def announce(row):
        print("done", row["key"], flush=True)

    run_items([WorkItem(key=f"k{i}", payload=i) for i in range(400)], factory, sys.argv[1],
              concurrency=2, progress=False, on_record=announce)
    print("finished", flush=True)
    """
)


def test_resume_after_sigkill_loses_nothing_and_repeats_nothing(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(KILLED_SCRIPT)
    out = tmp_path / "results.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out)], stdout=subprocess.PIPE, text=True
    )
    reported: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        reported.append(line.split()[1])
        if len(reported) >= 60:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    on_disk = read_results(out)
    assert set(reported) <= set(on_disk)  # every item reported done survived the kill
    assert len(on_disk) < 400

    resumed = subprocess.run(
        [sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    redone = [line.split()[1] for line in resumed.stdout.splitlines() if line.startswith("done")]
    assert not set(redone) & set(on_disk)  # nothing repeated
    keys = [row["key"] for row in lines(out)]
    assert sorted(keys) == sorted(f"k{i}" for i in range(400))  # nothing lost, once each


# -- Ray ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_session():
    import ray  # part of the dev set: make test installs it
    from ray import cloudpickle

    # the workers below live in this test module, which Ray's workers cannot import by name
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # Ray gives each actor its CPU share as OMP_NUM_THREADS only where the cluster did not
    # inherit one (the suite sets it per test worker)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OMP_NUM_THREADS", raising=False)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def pid_worker():
    pid = os.getpid()

    def work(item):
        if item.payload == "boom":
            raise ValueError("boom on purpose")
        return {"value": item.payload * 2, "pid": pid}

    return work


def dying_worker(marker: str):
    def work(item):
        if item.payload == 3 and not os.path.exists(marker):
            Path(marker).write_text("died once")
            os._exit(1)  # the actor's process dies mid-item
        return {"value": item.payload * 2}

    return work


@pytest.mark.xdist_group("ray")
def test_ray_and_local_give_identical_records(ray_session, tmp_path):
    work = [*items(8), WorkItem(key="bad", payload="boom")]
    local = run_items(work, pid_worker, tmp_path / "local.jsonl", progress=False)
    remote = run_items(
        work, pid_worker, tmp_path / "ray.jsonl", engine="ray", workers=2, progress=False
    )

    def strip(records):
        return [{k: v for k, v in r.items() if k != "pid"} for r in records]

    assert strip(remote.records) == strip(local.records)
    assert remote.failed == 1
    pids = {r["pid"] for r in remote.records if "pid" in r}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2  # one worker per actor, not per item
    assert sorted(r["key"] for r in lines(tmp_path / "ray.jsonl")) == sorted(i.key for i in work)


@pytest.mark.xdist_group("ray")
def test_ray_retries_the_items_of_a_killed_actor(ray_session, tmp_path):
    marker = tmp_path / "died"
    run = run_items(
        items(6),
        functools.partial(dying_worker, str(marker)),
        tmp_path / "r.jsonl",
        engine="ray",
        workers=2,
        progress=False,
    )
    assert marker.exists()  # an actor really died
    assert run.failed == 0
    assert [r["value"] for r in run.records] == [0, 2, 4, 6, 8, 10]
    assert sorted(r["key"] for r in lines(tmp_path / "r.jsonl")) == [f"k{i}" for i in range(6)]


@pytest.mark.xdist_group("ray")
def test_ray_resume_and_timeout(ray_session, tmp_path):
    out = tmp_path / "r.jsonl"
    run_items(items(3), pid_worker, out, engine="ray", workers=1, progress=False)
    run = run_items(items(5), pid_worker, out, engine="ray", workers=1, progress=False)
    assert (run.ran, run.skipped) == (2, 3)

    def hang_factory():
        def work(item):
            if item.payload == 1:
                time.sleep(60)
            return {"value": item.payload}

        return work

    hung = run_items(
        items(3),
        hang_factory,
        tmp_path / "t.jsonl",
        engine="ray",
        workers=1,
        progress=False,
        item_timeout=1.0,
    )
    kinds = [r.get("error_kind") for r in hung.records]
    assert kinds == [None, "timeout", None]


@pytest.mark.xdist_group("ray")
def kept_actor_pids() -> set[int]:
    """The pids of the actors kept after a run of ``pid_worker`` (each asked for its own)."""
    import ray

    from tooluse.evals import engine_ray

    kept = [actor for actors in engine_ray._KEPT.values() for actor in actors]
    probe = WorkItem(key="probe", payload=0)
    return {ray.get(actor.run.remote(probe))[0]["pid"] for actor in kept}


def test_ray_reuses_the_actors_of_a_finished_run_with_the_same_factory(ray_session, tmp_path):
    from tooluse.evals.engine_ray import release_workers

    release_workers()
    first = run_items(
        items(6), pid_worker, tmp_path / "a.jsonl", engine="ray", workers=2, progress=False
    )
    second = run_items(
        items(6), pid_worker, tmp_path / "b.jsonl", engine="ray", workers=2, progress=False
    )
    # the kept actors' own pids: one actor may have taken all of a run's items
    assert {r["pid"] for r in first.records} <= (first_pids := kept_actor_pids())
    assert {r["pid"] for r in second.records} <= first_pids  # the same processes, no new load
    assert [r["value"] for r in second.records] == [0, 2, 4, 6, 8, 10]
    assert kept_actor_pids() == first_pids and release_workers() == len(first_pids)
    third = run_items(
        items(2), pid_worker, tmp_path / "c.jsonl", engine="ray", workers=1, progress=False
    )
    assert not {r["pid"] for r in third.records} & first_pids  # released: fresh actors


@pytest.mark.xdist_group("ray")
def test_ray_actors_kept_for_another_factory_do_not_hold_the_cpus(ray_session, tmp_path):
    # both CPUs are held by the kept actors of pid_worker; a run of another factory must
    # release them instead of waiting for CPUs forever
    run_items(items(2), pid_worker, tmp_path / "a.jsonl", engine="ray", workers=2, progress=False)
    run = run_items(
        items(3), doubling_worker, tmp_path / "b.jsonl", engine="ray", workers=2, progress=False
    )
    assert [r["value"] for r in run.records] == [0, 2, 4]


def test_ray_missing_is_a_one_line_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray looks like
    with pytest.raises(EngineError, match=r"pip install 'tooluse\[ray\]'"):
        run_items(items(1), doubling_worker, tmp_path / "r.jsonl", engine="ray", progress=False)


def broken_factory():
    raise RuntimeError("model file missing")


@pytest.mark.xdist_group("ray")
def test_ray_worker_that_cannot_start_is_a_clear_error(ray_session, tmp_path):
    with pytest.raises(EngineError, match="Ray worker failed to start.*model file missing"):
        run_items(
            items(3), broken_factory, tmp_path / "r.jsonl", engine="ray", workers=1, progress=False
        )


def test_one_repair_cuts_a_cut_write_and_can_set_corrupt_lines_aside(tmp_path):
    from tooluse.evals.results import repair_results

    out = tmp_path / "results.jsonl"
    out.write_text('{"key": "a"}\n#garbage\n{"key": "b"}\n{"key": "c", "val')
    assert repair_results(out) == []  # only the cut last line goes
    assert out.read_text() == '{"key": "a"}\n#garbage\n{"key": "b"}\n'
    assert repair_results(out, set_aside_corrupt=True) == [2]
    assert out.read_text() == '{"key": "a"}\n{"key": "b"}\n'
    assert (tmp_path / "results.corrupt.jsonl").read_text() == "#garbage\n"
    assert set(read_results(out)) == {"a", "b"}


def test_run_items_takes_its_options_as_a_dataclass_or_as_keywords(tmp_path):
    from tooluse.evals.engine import EngineOptions

    options = EngineOptions(concurrency=2, progress=False)
    run = run_items(items(4), doubling_worker, tmp_path / "a.jsonl", options=options)
    assert [r["value"] for r in run.records] == [0, 2, 4, 6]
    with pytest.raises(EngineError, match="at least 1"):
        run_items(items(1), doubling_worker, tmp_path / "b.jsonl", options=options, concurrency=0)
    with pytest.raises(TypeError, match="run_items"):
        run_items(items(1), doubling_worker, tmp_path / "c.jsonl", colour="blue")


# -- interrupts ---------------------------------------------------------------------------------


def test_ctrl_c_stops_the_running_item_and_keeps_the_finished_ones(tmp_path):
    """The interrupt reaches the main thread only; the worker's loop must stop too."""
    from tooluse.evals.engine import RunInterrupted
    from tooluse.interrupts import GenerationInterrupted, stop_requested

    stopped = threading.Event()

    def make():
        def work(item: WorkItem) -> dict:
            if item.payload == 0:
                return {"value": 0}
            main = threading.main_thread().ident
            assert main is not None
            # Ctrl-C mid-item: SIGINT, delivered to the main thread as the terminal would.
            threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # a minute of "tokens"
                if stop_requested():
                    stopped.set()
                    raise GenerationInterrupted("stopped")
                time.sleep(0.01)
            return {"value": item.payload}

        return work

    out = tmp_path / "results.jsonl"
    with pytest.raises(RunInterrupted) as caught:
        run_items(items(3), make, out, progress=False)
    assert stopped.is_set()  # the in-flight item was cancelled, not left running
    assert caught.value.abandoned == 0 and caught.value.written == 1
    assert [row["key"] for row in lines(out)] == ["k0"]  # the cut-short item is not recorded
    assert not stop_requested()  # cleared once the workers stopped: later runs generate
    again = run_items(items(2), doubling_worker, out, progress=False)
    assert again.skipped == 1 and again.ran == 1


def cpu_share_worker():
    def work(item):
        return {"threads": os.environ.get("OMP_NUM_THREADS"), "value": item.payload}

    return work


@pytest.mark.xdist_group("ray")
def test_ray_actors_share_the_cpus_and_the_local_model_follows(ray_session, tmp_path, monkeypatch):
    # two actors on 2 CPUs reserve one each, one actor both: Ray tells each its share as
    # OMP_NUM_THREADS, and the local model's default thread count follows it
    from tooluse.evals.engine_ray import release_workers
    from tooluse.local.backend import default_threads

    release_workers()
    one = run_items(
        items(2), cpu_share_worker, tmp_path / "a.jsonl", engine="ray", workers=1, progress=False
    )
    two = run_items(
        items(4), cpu_share_worker, tmp_path / "b.jsonl", engine="ray", workers=2, progress=False
    )
    assert {r["threads"] for r in one.records} == {"2"}
    assert {r["threads"] for r in two.records} == {"1"}
    release_workers()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert default_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert default_threads() == min(len(os.sched_getaffinity(0)), 8)


class _Interrupting:
    """Items are ``{"value"}`` or, for items cut short, ``{"value", "hold", "marker"}``.

    Every item of the run has a place at once: a threaded Ray actor may start its items in
    any order, and with fewer places the held items could take them all while k0, which the
    interrupting item waits for, waits for a place (a held item then ran its minute out and was
    written). A held item "generates" for a minute, stopping between tokens when its process is
    asked to (leaving ``marker``); with ``interrupt`` (the driver's pid) it first waits for
    ``results`` to hold k0, then sends the driver SIGINT, as Ctrl-C would."""

    concurrency = 4

    def __call__(self, item):
        from tooluse.interrupts import GenerationInterrupted, stop_requested

        payload = item.payload
        if stop_requested():  # a worker asked to stop before must not be used again
            raise GenerationInterrupted("stopped before the item started")
        if payload.get("interrupt"):
            results = Path(payload["results"])  # Ctrl-C once the item before is on disk
            while '"k0"' not in (results.read_text() if results.exists() else ""):
                time.sleep(0.01)
            time.sleep(0.2)
            os.kill(payload["interrupt"], signal.SIGINT)
        if payload.get("hold"):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if stop_requested():
                    Path(payload["marker"]).write_text("stopped")
                    raise GenerationInterrupted("stopped between tokens")
                time.sleep(0.01)
        return {"value": payload["value"]}


@pytest.mark.xdist_group("ray")
def test_ctrl_c_stops_a_ray_run_keeps_what_finished_and_resumes(ray_session, tmp_path):
    from tooluse.evals.engine import RunInterrupted

    out, marker = tmp_path / "ray.jsonl", tmp_path / "stopped"
    hold = {"hold": True, "marker": str(marker)}
    work = [WorkItem(key="k0", payload={"value": 0})]
    work += [WorkItem(key=f"k{i}", payload={"value": i, **hold}) for i in range(1, 4)]
    work[1].payload.update(interrupt=os.getpid(), results=str(out))
    with pytest.raises(RunInterrupted) as caught:
        run_items(work, _Interrupting, out, engine="ray", workers=1, progress=False)
    # the held items had a minute to go: they were asked to stop, not left to run
    assert marker.exists()
    assert caught.value.written == 1 and caught.value.abandoned == 0
    assert [row["key"] for row in lines(out)] == ["k0"]  # the cut-short items are not recorded
    assert [row["key"] for row in caught.value.records] == ["k0"]
    # The rerun (same factory, same Ray session) resumes on fresh actors, none left stopping.
    again = [WorkItem(key=f"k{i}", payload={"value": i}) for i in range(4)]
    run = run_items(again, _Interrupting, out, engine="ray", workers=1, progress=False)
    assert (run.skipped, run.ran, run.failed) == (1, 3, 0)
    assert [row["value"] for row in run.records] == [0, 1, 2, 3]


class _FourAtOnce:
    """A worker that takes four items at once (as a batched model does) and records how many
    of its items ran together."""

    concurrency = 4

    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0

    def __call__(self, item):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.3)
        with self.lock:
            self.running -= 1
        return {"value": item.payload, "most": self.most, "pid": os.getpid()}


@pytest.mark.xdist_group("ray")
def test_a_ray_actor_runs_as_many_items_at_once_as_its_worker_takes(ray_session, tmp_path):
    run = run_items(
        items(12), _FourAtOnce, tmp_path / "ray.jsonl", engine="ray", workers=1, progress=False
    )
    assert [r["value"] for r in run.records] == list(range(12))
    assert len({r["pid"] for r in run.records}) == 1
    assert max(r["most"] for r in run.records) == 4  # four together, never five
