"""hiapi.run's parts without a job: the mpiexec command line for several hosts, the thread
budget per rank, and reading the first failure out of the ranks' output."""
import sys

from hiapi.run import mpiexec
from hiapi.run.failures import FailureLog


def test_hosts_hostfile_and_the_thread_budget_reach_mpiexec(monkeypatch):
    monkeypatch.delenv("HIAPI_NUM_THREADS", raising=False)
    assert mpiexec.ranks_per_host(8, "a:4,b:4") == 4 and mpiexec.ranks_per_host(3, None) == 3
    assert mpiexec.threads_per_rank(8, "a:4,b:4", cpus=16) == 4
    assert mpiexec.threads_per_rank(4, None, cpus=2) == 1
    line = mpiexec.command(8, ["train.py", "--epochs", "2"], hosts="a:4,b:4", threads=4)
    assert line[1:5] == ["-n", "8", "-hosts", "a:4,b:4"]
    assert line[line.index("HIAPI_NUM_THREADS") + 1] == "4"
    assert line[-4:] == [str(mpiexec.SUPERVISOR), "train.py", "--epochs", "2"]
    assert line[-5] == sys.executable
    with_file = mpiexec.command(2, ["t.py"], hostfile="hosts.txt")
    assert with_file[3:5] == ["-f", "hosts.txt"]
    monkeypatch.setenv("HIAPI_NUM_THREADS", "3")             # the user's choice wins
    assert "HIAPI_NUM_THREADS" not in mpiexec.command(2, ["t.py"], threads=1)


def test_the_first_rank_in_trouble_is_the_failure_with_its_traceback_and_step():
    log = FailureLog()
    for rank, text in [(0, "epoch 1 done"), (2, "[hiapi rank 2/4] fit failed at epoch 3, "
                                               "batch 7; aborting the job:"),
                       (2, "Traceback (most recent call last):"),
                       (2, '  File "train.py", line 9, in <module>'),
                       (2, "MemoryError: out of memory"),
                       (1, "Traceback (most recent call last):"),
                       (1, "RuntimeError: collective aborted")]:
        log.line(rank, text)
    log.report({"rank": 3, "pid": 5, "host": "n1", "signal": "SIGKILL"})
    failure = log.failure()
    assert failure.rank == 2 and failure.position == "epoch 3, batch 7"
    assert failure.how == "raised MemoryError: out of memory"
    assert failure.traceback.endswith("MemoryError: out of memory")
    killed = FailureLog()
    killed.report({"rank": 3, "pid": 5, "host": "n1", "signal": "SIGKILL"})
    assert killed.failure().describe() == "rank 3 was killed by SIGKILL (pid 5 on n1)"
    assert not killed.failure().repeatable


def test_no_mpiexec_is_a_message_saying_what_to_install(monkeypatch, tmp_path, capsys):
    from hiapi.run.cli import main
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["-n", "2", "train.py"]) == 2
    assert "pip install 'hiapi[mpi]'" in capsys.readouterr().err


def test_a_recorded_failure_wins_over_output_cut_short(tmp_path):
    """What a rank wrote to HIAPI_RUN_DIR before its abort, when the output lost the end of
    its traceback; a rank killed first still comes first."""
    import json
    log = FailureLog()
    log.line(1, "Traceback (most recent call last):")
    log.line(1, '  File "train.py", line 9, in <module>')          # cut here
    (tmp_path / "failure-1.json").write_text(json.dumps({
        "rank": 1, "time": 2.0, "position": "epoch 2, batch 5",
        "traceback": 'Traceback (most recent call last):\n  File "train.py", line 9\n'
                     'ValueError: bad\n'}))
    (tmp_path / "failure-0.json").write_text(json.dumps({
        "rank": 0, "time": 3.0, "position": None, "traceback": "RuntimeError: later\n"}))
    failure = log.failure(tmp_path)
    assert failure.signature == (1, "raised ValueError: bad", "epoch 2, batch 5")
    log.report({"rank": 2, "pid": 9, "host": "h", "signal": "SIGKILL"})
    killed = FailureLog()
    killed.report({"rank": 2, "pid": 9, "host": "h", "signal": "SIGKILL"})
    assert killed.failure(tmp_path).rank == 2


def test_the_supervisor_hands_a_group_signal_to_its_script_once(tmp_path):
    """MPICH signals each rank's process group; the script runs in a group of its own, so a
    Ctrl-C reaches it once (passed on by the supervisor), not a second time in the middle of
    its handling of the first. A SIGKILL of the supervisor's group still ends the script."""
    import os
    import signal
    import subprocess
    import time
    from hiapi.run.mpiexec import SUPERVISOR
    script = tmp_path / "count.py"
    script.write_text("import os, signal, sys, time\n"
                      "seen = []\n"
                      "signal.signal(signal.SIGINT, lambda *a: (seen.append(1), time.sleep(0.5)))\n"
                      "print('pid', os.getpid(), os.getpgid(0), flush=True)\n"
                      "end = time.monotonic() + (1.5 if sys.argv[1] == 'int' else 60)\n"
                      "while time.monotonic() < end:\n"
                      "    time.sleep(0.05)\n"
                      "print('interrupts', len(seen), flush=True)\n")
    for how in ("int", "kill"):
        supervisor = subprocess.Popen([sys.executable, str(SUPERVISOR), str(script), how],
                                      stdout=subprocess.PIPE, text=True, start_new_session=True)
        pid, group = map(int, supervisor.stdout.readline().split()[-2:])
        assert group == pid != supervisor.pid
        os.killpg(supervisor.pid, signal.SIGINT if how == "int" else signal.SIGKILL)
        out, _ = supervisor.communicate(timeout=60)
        if how == "int":
            assert out.splitlines()[-1] == "[rank 0] interrupts 1"
        else:
            time.sleep(0.5)
            try:
                os.kill(pid, 0)
                alive = open(f"/proc/{pid}/stat").read().split()[2] != "Z"
            except (ProcessLookupError, FileNotFoundError):
                alive = False
            assert not alive, "the script outlived its killed supervisor"
