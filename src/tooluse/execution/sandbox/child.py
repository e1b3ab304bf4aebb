"""The sandbox child: sets up the isolation, then runs the model's code.

Not imported by tooluse: :mod:`tooluse.execution.sandbox.process` runs this file (compiled once per
process, or its source with ``-c``) as ``python -I`` with one comma-separated argument (see
:func:`_config`). Steps:

1. New namespaces, one by one, so the report says which ones the kernel refused: user (when
   not root), mount, PID, IPC, UTS and, unless the network is allowed, network.
2. With a PID namespace this process forks: it stays outside as a supervisor that waits for
   the child (PID 1 inside) and ends as the code ended; when PID 1 ends, the kernel kills
   everything left in the namespace. The supervisor also kills PID 1 when the parent's
   lifeline pipe closes (the parent died, or stopped the call). Without a PID namespace
   (refused, or ``isolate`` off) this process forks too, as a subreaper: orphans of the code
   are re-parented to it, and when the code ends or the lifeline closes it kills every
   descendant (found through the host's ``/proc``, opened before the private root hides it)
   before ending as the code ended. In a session the code's replies pass through the
   supervisor, which first kills every process but the code's own (and PID 1).
3. PID 1 starts a new session, builds a private root (tmpfs; system and interpreter
   directories bound read-only; the work directory the only writable host directory; a fresh
   ``/proc``; a minimal ``/dev``; a small ``/tmp``), pivots into it and drops privileges
   (as root: uid/gid 65534 without capabilities; in a user namespace: every capability
   dropped), with ``no_new_privs`` set, then forks the code's process (PID 2: PID 1 would
   ignore signals such as SIGXCPU) and only reaps, relaying the code's exit status or signal.
4. The code's process reports what was enforced on the status pipe and closes it, sets the
   resource limits (hard = soft; CPU: SIGXCPU at the limit, SIGKILL a second later) and the
   in-interpreter process guard, then runs ``main.py`` (one run) or serves cells from the
   command pipe (a session).
"""

import os
import sys

# No ``from __future__`` and no ``typing`` at run time: importing them costs the child
# milliseconds on every run (typing also pulls in ``re``).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    Replies = tuple[int, int, int]  # a session's reply relay: see _replies

NOBODY = 65534
WORKDIR = "/sandbox"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "passwd", "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "services",
    "protocols", "mime.types", "ssl", "ca-certificates", "os-release",
)  # fmt: skip
DEVICES = ("null", "zero", "full", "random", "urandom")

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 24, 36, 38
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}


def _config() -> dict[str, int | None]:
    names = (
        "cpu_seconds", "memory_bytes", "file_size_bytes", "allow_subprocess", "allow_network",
        "isolate", "status_fd", "lifeline_fd", "command_fd", "reply_fd", "tmp_mb",
    )  # fmt: skip
    values = (None if v == "-" else int(v) for v in sys.argv[1].split(","))
    return dict(zip(names, values, strict=True))


class Setup:
    """The isolation steps; ``report`` collects ``enforced NAME`` / ``missing NAME reason``."""

    def __init__(self, config: dict[str, int | None]) -> None:
        import ctypes

        self.ctypes: Any = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mount.argtypes = (
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p,
        )  # fmt: skip
        self.config = config
        self.report: list[str] = []
        self.root = os.geteuid() == 0
        self.userns = False
        self.namespaces: set[str] = set()

    def enforced(self, name: str) -> None:
        self.report.append(f"enforced {name}")

    def missing(self, name: str, reason: str) -> None:
        self.report.append(f"missing {name} {reason}")

    def _error(self, what: str) -> str:
        number = self.ctypes.get_errno()
        return f"{what}: {os.strerror(number)}"

    def _unshare(self, flag: int, name: str) -> bool:
        if self.libc.unshare(flag) == 0:
            self.namespaces.add(name)
            self.enforced(f"{name}_namespace")
            return True
        self.missing(f"{name}_namespace", self._error("unshare"))
        return False

    def unshare_all(self) -> None:
        uid, gid = os.geteuid(), os.getegid()
        if not self.root or self.libc.unshare(CLONE_NEWNS) != 0:
            # Without root, a user namespace gives the rights to make the others.
            if self._unshare(CLONE_NEWUSER, "user"):
                self.userns = True
                for path, text in (
                    ("/proc/self/setgroups", "deny"),
                    ("/proc/self/uid_map", f"{uid} {uid} 1"),
                    ("/proc/self/gid_map", f"{gid} {gid} 1"),
                ):
                    try:
                        with open(path, "w") as handle:
                            handle.write(text)
                    except OSError as exc:
                        self.missing("user_mapping", f"{path}: {exc.strerror}")
            self._unshare(CLONE_NEWNS, "mount")
        else:
            self.namespaces.add("mount")
            self.enforced("mount_namespace")
        self._unshare(CLONE_NEWPID, "pid")
        self._unshare(CLONE_NEWIPC, "ipc")
        self._unshare(CLONE_NEWUTS, "uts")
        if not self.config["allow_network"]:
            self._unshare(CLONE_NEWNET, "network")

    # -- filesystem view -----------------------------------------------------------------------

    def _mount(self, source: str | None, target: str, kind: str | None, flags: int) -> None:
        data = None
        if kind == "tmpfs":
            data, kind = source, "tmpfs"
            source = "tmpfs"
        if self.libc.mount(
            source.encode() if source else None,
            target.encode(),
            kind.encode() if kind else None,
            flags,
            data.encode() if data else None,
        ):
            raise OSError(self._error(f"mount {target}"))

    def _locked_flags(self, path: str) -> int:
        # Remounting inside a user namespace must keep the flags the host mount has.
        flags = os.statvfs(path).f_flag
        kept = 0
        for st_flag, ms_flag in ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC),
                                 (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME)):  # fmt: skip
            if flags & st_flag:
                kept |= ms_flag
        return kept

    def _bind(self, source: str, target: str, *, writable: bool = False) -> None:
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        self._mount(source, target, None, MS_BIND | MS_REC)
        flags = MS_BIND | MS_REMOUNT | MS_NOSUID | self._locked_flags(target)
        self._mount(None, target, None, flags | (0 if writable else MS_RDONLY))

    def _python_dirs(self) -> list[str]:
        found = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
        for exe in (sys.executable, os.path.realpath(sys.executable)):
            found.add(os.path.dirname(exe))
        found |= {os.path.realpath(p) for p in found}
        return sorted(p for p in found if p and os.path.isdir(p) and p != "/")

    def build_root(self, workdir: str) -> None:
        """A fresh root: tmpfs, minimal /dev, /tmp, the work dir, read-only system and Python
        directories, a private /proc; then pivot into it."""
        new_root = os.path.join(os.path.dirname(workdir), "root")
        self._mount(None, "/", None, MS_REC | MS_PRIVATE)
        self._mount("size=4m,mode=0755", new_root, "tmpfs", MS_NOSUID | MS_NODEV)
        tree = lambda path: new_root + path  # noqa: E731
        self._make_dev(tree)
        tmp_size = f"size={self.config['tmp_mb'] or 64}m,mode=1777"
        self._mount(tmp_size, tree("/dev/shm"), "tmpfs", MS_NOSUID | MS_NODEV)
        os.makedirs(tree("/tmp"))
        self._mount(tmp_size, tree("/tmp"), "tmpfs", MS_NOSUID | MS_NODEV)
        self._bind(workdir, tree(WORKDIR), writable=True)
        self._bind_system(tree)
        self._bind_etc(tree)
        self._mount_proc(tree)
        self._pivot(new_root)

    def _make_dev(self, tree: "Callable[[str], str]") -> None:
        os.makedirs(tree("/dev"))
        self._mount("size=64k,mode=0755", tree("/dev"), "tmpfs", MS_NOSUID | MS_NOEXEC)
        for device in DEVICES:
            if os.path.exists(f"/dev/{device}"):
                open(tree(f"/dev/{device}"), "w").close()
                self._mount(f"/dev/{device}", tree(f"/dev/{device}"), None, MS_BIND)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                             ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
            os.symlink(target, tree(f"/dev/{name}"))
        os.makedirs(tree("/dev/shm"))

    def _bind_system(self, tree: "Callable[[str], str]") -> None:
        bound: list[str] = []
        for path in [*SYSTEM_DIRS, *self._python_dirs()]:
            if any(path == b or path.startswith(b + "/") for b in bound):
                continue
            if path.split("/")[1] in ("dev", "proc", WORKDIR.strip("/")) or path == "/tmp":
                continue  # would land on (or inside) a mount made above
            # An interpreter or virtualenv under /tmp (a checkout there) is bound read-only on
            # top of the fresh /tmp, or the code could not even start Python or import from it.
            if os.path.islink(path) and path.count("/") == 1:
                os.symlink(os.readlink(path), tree(path))  # merged /usr: /bin -> usr/bin
            elif os.path.isdir(path):
                self._bind(path, tree(path))
                bound.append(path)

    def _bind_etc(self, tree: "Callable[[str], str]") -> None:
        os.makedirs(tree("/etc"), exist_ok=True)
        for entry in ETC_ENTRIES:
            path = f"/etc/{entry}"
            if os.path.islink(path):
                os.symlink(os.readlink(path), tree(path))
            elif os.path.exists(path):
                self._bind(path, tree(path))

    def _mount_proc(self, tree: "Callable[[str], str]") -> None:
        os.makedirs(tree("/proc"))
        if "pid" not in self.namespaces:
            self.missing("private_proc", "no PID namespace (no /proc at all)")
            return
        try:
            self._mount("proc", tree("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as exc:
            self.missing("private_proc", str(exc))
            return
        self.enforced("private_proc")

    def _pivot(self, new_root: str) -> None:
        os.chdir(new_root)
        number = PIVOT_ROOT.get(os.uname().machine)
        if number is None:
            raise OSError(f"pivot_root: unknown system call number on {os.uname().machine}")
        if self.libc.syscall(number, b".", b".") != 0:
            raise OSError(self._error("pivot_root"))
        if self.libc.umount2(b".", MNT_DETACH) != 0:
            raise OSError(self._error("umount old root"))
        os.chdir("/")
        self._mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        self._mount(None, "/dev", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
        os.chdir(WORKDIR)

    # -- privileges ----------------------------------------------------------------------------

    def drop_privileges(self) -> None:
        for cap in range(64):  # the bounding set: nothing can come back through execve
            self.libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
        if self.root and not self.userns and os.stat(".").st_uid == NOBODY:
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)  # also clears every capability
            except OSError as exc:
                self.missing("unprivileged_user", f"setuid: {exc.strerror}")
            else:
                self.enforced(f"unprivileged_user uid={NOBODY}")
                self._no_new_privs()
                return
        if self.root or self.userns:
            ctypes = self.ctypes
            header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # version 3, this process
            data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
            if self.libc.capset(header, data) == 0:
                self.enforced("capabilities_dropped")
            else:
                self.missing("capabilities_dropped", self._error("capset"))
        else:
            self.missing("unprivileged_user", "runs as the calling user (no user namespace)")
        self._no_new_privs()

    def _no_new_privs(self) -> None:
        if self.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
            self.enforced("no_new_privs")
        else:
            self.missing("no_new_privs", self._error("prctl"))


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
        _close(config["status_fd"], config["command_fd"], config["reply_fd"])
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


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            os.close(fd)


def _isolate(config: dict[str, int | None]) -> list[str]:
    setup = Setup(config)
    setup.unshare_all()
    if not config["allow_network"] and "network" not in setup.namespaces:
        _send(config, setup.report)
        sys.stderr.write(
            "network isolation is not available on this system; pass allow_network=True to "
            "run with the host's network\n"
        )
        os._exit(126)
    relay = None
    if "pid" in setup.namespaces:
        relay, relay_w = os.pipe()
        replies = _replies(config)
        pid = os.fork()
        if pid:
            _close(config["status_fd"], config["command_fd"], config["reply_fd"], relay_w)
            _supervise(pid, config["lifeline_fd"], relay, replies)
        os.close(relay)
        _close(*(replies or ()))  # nothing of the host stays in the namespace
        relay = relay_w
        setup.libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    else:
        _contain(config, setup.libc, setup.report)
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (started with a new session)
    if "mount" in setup.namespaces:
        try:
            setup.build_root(os.getcwd())
            setup.enforced(f"filesystem_view workdir={WORKDIR}")
        except OSError as exc:
            setup.missing("filesystem_view", str(exc))
    else:
        setup.missing("filesystem_view", "no mount namespace")
    setup.drop_privileges()
    if relay is not None:
        setup.libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)  # a uid change cleared it
        # PID 1 ignores signals it has no handler for (SIGXCPU, SIGTERM...): the code runs as
        # PID 2, with ordinary signal semantics, and PID 1 only waits for it.
        pid = os.fork()
        if pid:
            _close(config["status_fd"], config["command_fd"], config["reply_fd"])
            _close(config["lifeline_fd"])
            _init(pid, relay)
        os.close(relay)
    return setup.report


def _send(config: dict[str, int | None], report: list[str]) -> None:
    fd = config["status_fd"]
    if fd is not None:
        os.write(fd, ("\n".join(report) + "\n").encode())
        os.close(fd)
        config["status_fd"] = None


def _limit(config: dict[str, int | None], report: list[str]) -> None:
    import resource

    def cap(kind: int, value: int | None, grace: int = 0) -> None:
        if value is not None:
            try:
                resource.setrlimit(kind, (value, value + grace))
            except (ValueError, OSError):
                pass

    # CPU: SIGXCPU at the limit (a clear reason), SIGKILL one second later if it is caught.
    cap(resource.RLIMIT_CPU, config["cpu_seconds"], 1)
    cap(resource.RLIMIT_AS, config["memory_bytes"])
    cap(resource.RLIMIT_FSIZE, config["file_size_bytes"])
    cap(resource.RLIMIT_CORE, 0)
    report.append("enforced rlimits")
    if config["allow_subprocess"]:
        return
    cap(resource.RLIMIT_NPROC, 1)

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError("process creation is not allowed in the sandbox")

    import posix

    for name in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv",
                 "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv",
                 "spawnve", "spawnvp", "spawnvpe", "kill", "killpg"):  # fmt: skip
        for module in (os, posix):
            if hasattr(module, name):
                setattr(module, name, refused)
    import _posixsubprocess  # type: ignore[import-not-found]

    _posixsubprocess.fork_exec = refused  # type: ignore[assignment]
    sys.modules["_ctypes"] = None  # type: ignore[assignment]
    report.append("enforced process_guard")


def _run_code(source: str, filename: str, namespace: dict[str, object]) -> int:
    """Run one piece of code; the exit status it asks for (0, 1 after an exception)."""
    try:
        exec(compile(source, filename, "exec"), namespace)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")
        return 1
    except BaseException as exc:
        # Imported only now: linecache pulls in tokenize and re, slow to import on every run.
        import linecache
        import traceback

        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)

        tb = exc.__traceback__
        tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb
        sys.stdout.flush()
        sys.stderr.write("".join(traceback.format_exception(type(exc), exc, tb)))
        return 1
    return 0


def _read_exact(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _serve(command_fd: int, reply_fd: int) -> None:
    """A session: cells arrive as ``<len> <marker len>\\n<code><marker>``; globals persist."""
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    number = 0
    while True:
        header = b""
        while not header.endswith(b"\n"):
            byte = os.read(command_fd, 1)
            if not byte:
                os._exit(0)
            header += byte
        code_size, marker_size = (int(part) for part in header.split())
        source = _read_exact(command_fd, code_size).decode("utf-8", "replace")
        marker = _read_exact(command_fd, marker_size)
        number += 1
        status = _run_code(source, f"cell{number}.py", namespace)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.write(1, marker)
        os.write(2, marker)
        os.write(reply_fd, f"{status}\n".encode())


def _main() -> None:
    config = _config()
    if config["isolate"]:
        report = _isolate(config)
    else:
        import ctypes

        report = ["missing isolation turned off"]
        _contain(config, ctypes.CDLL(None, use_errno=True), report)
    os.environ["HOME"] = os.environ["TMPDIR"] = os.getcwd()
    for fd in (config["lifeline_fd"],):
        if fd is not None:
            os.close(fd)
    for name in [m for m in sys.modules if m == "ctypes" or m.startswith("ctypes.")]:
        del sys.modules[name]
    _limit(config, report)
    _send(config, report)
    if config["command_fd"] is not None and config["reply_fd"] is not None:
        _serve(config["command_fd"], config["reply_fd"])
    sys.argv = ["main.py"]
    with open("main.py", encoding="utf-8") as handle:
        source = handle.read()
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    status = _run_code(source, "main.py", namespace)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(status)


if __name__ == "__main__":
    _main()
