"""What `benchctl run` shows while its sweep runs: a progress bar in a terminal, a line per cell in a log (CI, a
GPU machine; none for a cell that cannot run here, which the run named before its sweep, a line a reason), with
the time the cells left will take, the waits for the machine, and what went wrong as it ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich loads inside the commands, so `benchctl --help` stays fast
    from rich.text import Text

WAIT_LINE_S = 10.0  # in a log, a line at most this often while the sweep waits for the machine (not one per reading)


def progress_run(session, left) -> None:
    """The cells as they run: a bar in a terminal; in a log, a line per cell with its wall time; both with the
    time the cells left will take, as `left` says (sweep/time_left.py), and then the cells measured again at the
    end (a log's last planned line is not the sweep's end)."""
    from benchctl import console

    with console.progress() as bar:
        shown = _Progress(bar, len(session.plan.cells) * session.plan.total_rounds, left)
        session.run(on_start=shown.start, on_done=shown.done, on_wait=shown.wait, on_settled=shown.settled)


class _Progress:
    """What `progress_run` shows of the sweep's callbacks: cells done of `total`, the time left, the cell now,
    the waits for the machine."""

    def __init__(self, bar, total: int, left) -> None:
        from benchctl import console

        self.bar, self.total, self.left, self.count = bar, total, left, 0
        self.task = bar.add_task("cells", total=total, current="", left=left.text())
        self.lines = not bar.console.is_terminal  # a log (CI, a GPU machine) keeps no bar: a line per cell instead
        self.lap, self.wait_line = console.lap(), console.every(WAIT_LINE_S)
        self.waiting = False  # a slow canary was heard since the last wait ended
        self.told_fast = False  # the canary read far faster than calibrated, and the run was told once

    def start(self, cell) -> None:
        if not self.count:  # the first cell's time starts with it, not with the wait for the machine before it
            self.lap()
        current = cell.label()
        if self.count >= self.total:  # every planned cell is done: this one is re-measured or re-checked
            current = f"measuring again at the end: {current}"
            self._line(current)
        self.bar.update(self.task, current=current)

    def done(self, cell, rows) -> None:
        from benchctl.vocab import Status

        bad = [r for r in rows if r["status"] not in (Status.OK, Status.UNAVAILABLE)]
        if bad:
            self.bar.console.print(_bad_line(cell, bad[0]))
        self.count += 1
        seconds = self.lap()
        self.left.finished(cell, seconds)
        left = self.left.text()  # a guess for every cell left: made once a cell
        if not rows or any(r["status"] != Status.UNAVAILABLE for r in rows):  # the others were named before the sweep
            self._line(f"cell {self.count}/{self.total} {cell.label()} ({seconds:.1f} s{_then(left)})")
        self.bar.update(self.task, advance=1, current=cell.label(), left=left)

    def wait(self, ratio: float) -> None:
        self.waiting = True
        said = f"waiting for the machine: its canary reads {ratio:.2f}x its calibrated time"
        if self.wait_line():
            self._line(said)
        self.bar.update(self.task, current=said)

    def settled(self, wait) -> None:
        """How a wait for the machine ended: one that went on with the machine still slow or busy (a terminal's bar
        had said only that it waited); in a log, one it had said was waiting for a slow canary; and, once a run, a
        canary far faster than calibrated, while the sweep can still be stopped to calibrate again."""
        if wait.slow or wait.busy or (self.lines and self.waiting):
            self.bar.console.print(settled_text(wait))
        if wait.fast and not self.told_fast:
            from benchctl import console

            self.bar.console.print(console.styled("warning: ", "yellow", fast_text(wait.canary_ratio)))
            self.told_fast = True
        self.waiting = False

    def _line(self, text: str) -> None:
        if self.lines:
            self.bar.console.print(text)


def _bad_line(cell, row) -> Text:
    """A pass that went wrong, as it ends: its status and message; and where the verdict is one a moment of load
    can imitate, that it is measured again at the end (sweep/recheck.py), so the tables may say otherwise."""
    from benchctl import console
    from benchctl.sweep.recheck import rechecked

    status, message = row["status"], str(row.get("message") or "")
    head = f"{cell.label()}: " + ("" if message.startswith(status) else f"{status} ")
    again = " (re-checked at the end of the sweep: the tables have the verdict)" if rechecked(status, message) else ""
    return console.styled(head, "yellow", message + again)


def settled_text(wait) -> str:
    """`the machine read quiet and at speed after 8 s (its canary 1.04x calibrated)`, or what it was still doing
    when --settle's budget ran out and the sweep went on."""
    from benchctl.results.schema import SLOW_PHASE

    canary = f"its canary {wait.canary_ratio:.2f}x calibrated" if wait.canary_ratio is not None else ""
    if not (wait.slow or wait.busy):
        return f"the machine read quiet and at speed after {wait.waited_s:.0f} s" + (f" ({canary})" if canary else "")
    still = [f"{canary}: passes timed while it reads over {1 + SLOW_PHASE:.2f}x are marked slow"] * wait.slow + [
        f"other processes keeping {wait.other_cores:.1f} cores busy"] * wait.busy
    return f"went on after waiting {wait.waited_s:.0f} s for the machine (--settle), {'; '.join(still)}"


def fast_text(ratio: float) -> str:
    """What a canary far faster than calibrated leaves a run: no pass in it can be marked slow."""
    return (f"the canary reads {ratio:.2f}x its calibrated time: `benchctl env --calibrate` ran while the machine was "
            "slow, so no pass of this run can read slow against it; stop and calibrate again to have slow passes "
            "marked")


def _then(text: str) -> str:
    return f", {text}" if text else ""
