"""The sandbox child's process tree: the supervisors outside the code, the session reply relay
and the kill of every process the code started.

Part of the child program, not imported by tooluse: :mod:`tooluse.execution.sandbox.process`
puts this source before ``child.py``'s and runs both as one program (see ``child.py`` for the
steps). The host's ``/proc`` is opened before the child builds its private root: the
supervisor shares the child's mount namespace, so after the pivot its ``/proc`` is the
sandbox's (or an empty directory).
"""

import os

# No ``from __future__`` and no ``typing`` at run time (see child.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    Replies = tuple[int, int, int]  # a session's reply relay: see _replies

PR_SET_CHILD_SUBREAPER = 36


def _end_as(status: int, relay: int | None) -> "NoReturn":
    """End this process the way a child ended (its exit status, or its signal)."""
    import signal

    number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if relay is not None:  # a relayed signal: PID 1 itself cannot die of most signals
        data = os.read(relay, 16)
        number = int(data) if data.strip() else number
    if number:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if number != signal.SIGKILL:
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _supervise(pid: int, lifeline: int | None, relay: int, replies: "Replies | None") -> "NoReturn":
    """Outside the PID namespace: wait for PID 1 and end as the code ended. In a session,
    each cell's reply reaches the parent only once every process but PID 1 and the code's
    (PID 2 inside) is gone."""
    sweep = None
    if replies is not None:
        proc = replies[2]
        sweep = lambda: _sweep(proc, pid, lambda p: _inner_pid(proc, p) == 2)  # noqa: E731
    status = _watch(pid, lifeline, replies, sweep)
    os.set_blocking(relay, False)
    try:
        _end_as(status, relay)
    except BlockingIOError:
        _end_as(status, None)


def _watch(
    pid: int, lifeline: int | None, replies: "Replies | None", sweep: "Callable[[], None] | None"
) -> int:
    """Wait for ``pid`` (killed when the lifeline closes) and return its wait status; relay
    each session reply to the parent after ``sweep()`` ended what the cell started."""
    import select
    import signal

    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    inner = replies[0] if replies is not None else None
    watched = [fd for fd in (pidfd, lifeline, inner) if fd is not None]
    while True:
        ready, _, _ = select.select(watched, [], [], None if pidfd is not None else 0.05)
        if pidfd is None:
            ended, status = os.waitpid(pid, os.WNOHANG)
            if ended:
                return status
        elif pidfd in ready:
            break
        if lifeline is not None and lifeline in ready and not os.read(lifeline, 64):
            os.kill(pid, signal.SIGKILL)  # the parent is gone, or stopped the call
            break
        if inner is not None and inner in ready:
            chunk = os.read(inner, 64)
            if not chunk:
                watched.remove(inner)
                continue
            if sweep is not None:
                sweep()
            try:
                os.write(replies[1], chunk)  # type: ignore[index]  # inner exists: so do replies
            except OSError:
                pass  # the parent is gone: the lifeline says so next
    return os.waitpid(pid, 0)[1]


def _init(pid: int, relay: int) -> "NoReturn":
    """PID 1: reap every orphan; when the code's process ends, end the namespace."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # the output pipes must close when the code ends
    while True:
        try:
            ended, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if ended == pid:
            break
    if os.WIFSIGNALED(status):
        os.write(relay, str(os.WTERMSIG(status)).encode())
        os._exit(1)
    os._exit(os.waitstatus_to_exitcode(status))


def _replies(config: dict[str, int | None]) -> "Replies | None":
    """A session's replies pass through the supervisor: ``(its read end, the parent's reply
    pipe, the host's /proc)``; the code's side writes to a new pipe (``config["reply_fd"]``).
    The code never holds the parent's pipe, so no reply reaches the parent unswept."""
    outer = config["reply_fd"]
    proc = _host_proc() if outer is not None else None
    if outer is None or proc is None:
        return None
    inner, config["reply_fd"] = os.pipe()
    return inner, outer, proc


def _host_proc() -> int | None:
    # Opened before the private root is built: the supervisor shares the mount namespace,
    # so after the pivot its /proc is the sandbox's (or an empty directory).
    try:
        return os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


def _contain(config: dict[str, int | None], libc: "Any", report: list[str]) -> None:
    """Without a PID namespace: stay outside as a subreaper and run the code in a child.

    Every process the code starts, even one in a new session or double-forked, stays a
    descendant of this process (orphans are re-parented to the nearest subreaper, not to
    init), so when the code ends, or the parent's lifeline closes, all of them are killed;
    in a session, also after each cell. Returns in the code's process.
    """
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        report.append("missing process_tree prctl: subreaper refused")
        return
    replies = _replies(config)
    proc = replies[2] if replies is not None else _host_proc()
    pid = os.fork()
    if pid:
        _close(*_pipes(config))
        _supervise_tree(pid, config["lifeline_fd"], proc, replies)
    _close(proc, *(replies[:2] if replies is not None else ()))  # nothing of the host stays
    report.append("enforced process_tree subreaper")


def _supervise_tree(
    pid: int, lifeline: int | None, proc: int | None, replies: "Replies | None"
) -> "NoReturn":
    """Wait for the code's process (or the lifeline's end), kill what is left, end as it did."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # the output pipes must close when the code's processes end
    status = _watch(pid, lifeline, replies, lambda: _sweep(proc, os.getpid(), pid.__eq__))
    _sweep(proc, os.getpid(), lambda _: False)
    _end_as(status, None)


def _descendants(proc: int | None, root: int) -> "list[tuple[int, int, bool]]":
    """``(pid, parent, ended)`` of each descendant of ``root``, read in ``proc`` (the host's
    /proc): from each process's ``task/*/children`` (a few reads for a quiet sandbox), else,
    where the kernel lacks those files, from every process's parent link."""
    found: list[tuple[int, int, bool]] = []
    todo = [root]
    while todo and proc is not None:
        parent = todo.pop()
        children = _children(proc, parent)
        if children is None:
            return _descendants_by_scan(proc, root)
        for child in children:
            found.append((child, parent, _stat(proc, child)[0] in b"ZX"))
            todo.append(child)
    return found


def _children(proc: int, pid: int) -> list[int] | None:
    """``pid``'s children (``[]`` when it is gone), or ``None`` without ``children`` files."""
    try:
        tasks = os.open(f"{pid}/task", os.O_RDONLY | os.O_DIRECTORY, dir_fd=proc)
    except OSError:
        return []
    found: list[int] = []
    try:
        for tid in os.listdir(tasks):
            try:
                fd = os.open(f"{tid}/children", os.O_RDONLY, dir_fd=tasks)
            except OSError:
                if _exists(tid, tasks):
                    return None  # the thread is there, its children file is not
                continue  # the thread ended meanwhile
            try:
                found += [int(n) for n in os.read(fd, 65536).split()]
            finally:
                os.close(fd)
    finally:
        os.close(tasks)
    return found


def _exists(name: str, folder: int) -> bool:
    try:
        os.stat(name, dir_fd=folder)
    except OSError:
        return False
    return True


def _stat(proc: int, pid: int) -> "list[bytes]":
    """The fields of ``/proc/PID/stat`` after the command name (``[b"X"]`` once it is gone)."""
    try:
        fd = os.open(f"{pid}/stat", os.O_RDONLY, dir_fd=proc)
        try:
            return os.read(fd, 4096).rsplit(b")", 1)[1].split()
        finally:
            os.close(fd)
    except (OSError, IndexError):
        return [b"X"]


def _descendants_by_scan(proc: int, root: int) -> "list[tuple[int, int, bool]]":
    children: dict[int, list[int]] = {}
    states: dict[int, bytes] = {}
    for entry in os.listdir(proc):
        fields = _stat(proc, int(entry)) if entry.isdigit() else []
        if len(fields) > 1:  # not gone meanwhile
            children.setdefault(int(fields[1]), []).append(int(entry))
            states[int(entry)] = fields[0]
    found: list[tuple[int, int, bool]] = []
    todo = [root]
    while todo:
        parent = todo.pop()
        for child in children.get(parent, ()):
            found.append((child, parent, states[child] in b"ZX"))
            todo.append(child)
    return found


def _inner_pid(proc: int, pid: int) -> int | None:
    """``pid``'s number inside its PID namespace (the last ``NSpid`` field)."""
    try:
        fd = os.open(f"{pid}/status", os.O_RDONLY, dir_fd=proc)
        try:
            text = os.read(fd, 8192).decode("ascii", "replace")
        finally:
            os.close(fd)
        line = next(x for x in text.splitlines() if x.startswith("NSpid:"))
        return int(line.split()[-1])
    except (OSError, StopIteration, ValueError):
        return None


def _sweep(proc: int | None, root: int, keep: "Callable[[int], bool]") -> None:
    """SIGKILL every live descendant of ``root`` (those ``keep`` spares excepted, not theirs)
    until none is left; the killed ones' children come here or to PID 1 meanwhile."""
    import signal
    import time

    me = os.getpid()
    for _ in range(5000):
        victims = []
        for pid, parent, ended in _descendants(proc, root):
            if keep(pid):
                continue
            if not ended:
                victims.append(pid)
            elif parent == me:
                try:
                    os.waitpid(pid, os.WNOHANG)  # reap this process's own dead children
                except ChildProcessError:
                    pass
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.001)


def _pipes(config: "dict[str, int | None]") -> "tuple[int | None, ...]":
    """The pipes only the code's process keeps: a supervisor or init holding one open would
    hide from the parent that the code has ended (no end of file)."""
    names = ("status_fd", "command_fd", "reply_fd", "call_fd", "answer_fd")
    return tuple(config[name] for name in names)


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            os.close(fd)
