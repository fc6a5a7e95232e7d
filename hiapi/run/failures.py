"""What failed in one attempt of a job, read from its ranks' output as it arrives.

The first failure is the first sign of trouble that reaches the launcher: a rank starting a
Python traceback, or a rank's supervisor reporting that it was killed or exited non-zero
(``rank_supervisor.MARK``). What happens after (MPICH aborting the other ranks, their
collectives failing) follows from it and is not reported as a cause. A failure's
``signature`` (the rank, the exception's last line, and the epoch and batch that hiapi's
``Strategy`` names when fit fails) is what ``--max-restarts`` compares: the same signature
twice in a row is a failure a restart does not cure."""
import json
import re
from collections import deque
from pathlib import Path
from dataclasses import dataclass, field

TAIL_LINES = 400
POSITION = re.compile(r"fit failed at (epoch \d+(?:, batch \d+)?)")
TRACEBACK = "Traceback (most recent call last):"


@dataclass
class Failure:
    rank: int
    how: str                      # "raised ValueError: ...", "was killed by SIGKILL", ...
    traceback: str = ""
    position: str | None = None   # "epoch 2, batch 5" when hiapi's fit said so

    @property
    def signature(self):
        return self.rank, self.how, self.position

    @property
    def repeatable(self):
        """Only a failure that says where it happened can be recognised as the same one."""
        return self.position is not None or bool(self.traceback)

    def describe(self):
        where = f" at {self.position}" if self.position else ""
        text = f"rank {self.rank} {self.how}{where}"
        return text + (f"\n{self.traceback}" if self.traceback else "")


@dataclass
class FailureLog:
    """Every rank's recent output lines, and the order in which ranks got into trouble."""
    tails: dict = field(default_factory=dict)
    first: list = field(default_factory=list)        # [(rank, report or None)] in order
    positions: dict = field(default_factory=dict)

    def line(self, rank, text):
        self.tails.setdefault(rank, deque(maxlen=TAIL_LINES)).append(text)
        found = POSITION.search(text)
        if found:
            self.positions[rank] = found.group(1)
        if text.startswith(TRACEBACK) and not any(r == rank for r, _ in self.first):
            self.first.append((rank, None))

    def report(self, report):
        self.first.append((report["rank"], report))

    def failure(self, folder=None):
        """The first failure of the attempt, or None when no rank got into trouble: a rank
        killed first, else the earliest failure a rank recorded in ``folder``
        (``distribute.abort.record_failure``: written before the abort, it survives output
        that MPICH's kill cut short), else the first trouble seen in the output."""
        killed_first = self.first and self.first[0][1] and "signal" in self.first[0][1]
        recorded = None if killed_first or folder is None else earliest_record(folder)
        if recorded is not None:
            return recorded
        if not self.first:
            return None
        rank, report = self.first[0]
        block = last_traceback(self.tails.get(rank, ()))
        if block:
            how = f"raised {block.splitlines()[-1].strip()}"
        elif report and "signal" in report:
            how = f"was killed by {report['signal']} (pid {report['pid']} on {report['host']})"
        else:
            how = f"exited with code {report['exit'] if report else '?'}"
        return Failure(rank, how, block, self.positions.get(rank))


def last_traceback(lines):
    """The last ``Traceback ...`` block in ``lines``, to its exception line."""
    lines = list(lines)
    starts = [k for k, text in enumerate(lines) if text.startswith(TRACEBACK)]
    if not starts:
        return ""
    block = [lines[starts[-1]]]
    for text in lines[starts[-1] + 1:]:
        block.append(text)
        if text and not text.startswith((" ", "\t")) and not text.startswith(TRACEBACK):
            break                  # the exception's own line ends the block
    return "\n".join(block)


def earliest_record(folder):
    """The earliest ``failure-R.json`` in ``folder`` as a Failure, or None."""
    records = []
    for path in Path(folder).glob("failure-*.json"):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):       # being written as the job was killed
            continue
    if not records:
        return None
    first = min(records, key=lambda record: record["time"])
    block = first["traceback"].rstrip("\n")
    return Failure(first["rank"], f"raised {block.splitlines()[-1].strip()}", block,
                   first["position"])
