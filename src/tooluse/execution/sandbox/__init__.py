"""A sandboxed ``python`` tool: model-written code runs in an isolated, limited interpreter.

::

    from tooluse.execution.sandbox import PythonSandbox, python_tool, run_python

    run_python("print(0.15 * 80)").output            # '12.0'
    tooluse.run(backend, "What is 17**5?", tools=[python_tool(timeout=5)])
    with PythonSandbox(timeout=5).session() as session:   # variables persist between calls
        session.run("x = 6")
        session.run("print(x * 7)").output           # '42'

What is enforced (Linux; every run, with the default settings). The child is a fresh
``python -I`` (no user site, no ``PYTHON*`` variables) that, before any of the code runs:

- **Namespaces**: new mount, PID, IPC and UTS namespaces, plus a new network namespace unless
  ``allow_network=True`` (the default is **no network**: not even 127.0.0.1). Root makes them
  directly; any other user gets them inside a new user namespace (its own uid mapped to itself).
- **Private filesystem view**: a new root on a small tmpfs, made read-only, holding ``/usr``,
  ``/bin``, ``/lib*``, the interpreter's and the virtualenv's directories and a short list of
  ``/etc`` entries (loader cache, time zone, ``passwd``/``group``, TLS certificates; never
  ``shadow``), all bound read-only; a fresh ``/proc`` showing only the sandbox's own processes; a
  ``/dev`` with ``null``, ``zero``, ``full``, ``random`` and ``urandom`` only; a small ``/tmp``.
  The only writable host directory is the run's own temporary directory, seen as ``/sandbox``
  (the working directory, ``HOME`` and ``TMPDIR``). No home directory, no ``/sys``, no ``/run``.
- **No privileges**: as root, the code runs as uid/gid 65534 (nobody) with no capabilities;
  in a user namespace, every capability is dropped; the capability bounding set is emptied and
  ``no_new_privs`` is set, so nothing can regain them.
- **Processes**: the code runs in its own PID namespace, in a new session, as PID 2 under a
  minimal init (PID 1, which reaps orphans); when the code ends (or is killed at the
  wall-clock timeout) init exits and the kernel kills every process left in the namespace, so
  nothing outlives the call. A supervisor outside the namespace passes the exit status (or
  signal) on, and kills the namespace when the calling process dies (a lifeline pipe). The
  caller's processes are invisible, so they cannot be signalled, traced or opened by pidfd.
  Without a PID namespace (``isolate=False``, or the kernel refused one) the supervisor is a
  subreaper (``PR_SET_CHILD_SUBREAPER``): every process the code starts stays its descendant,
  even in a new session or double-forked, and all of them are killed when the code ends, times
  out or the caller dies (listed as ``process_tree`` in ``result.isolation``). Only code
  running as the caller's own user (``isolate=False``) could kill that supervisor first.
  In a session, a call is one cell: before the cell's result comes back, the supervisor kills
  every process the session's interpreter started (only the interpreter itself stays); the
  interpreter never holds the pipe the result travels on, so no result comes back unswept.
- **Resource limits** (``setrlimit``, hard = soft): CPU seconds, address space, written file
  size, no core dumps and, unless ``allow_subprocess=True``, one process (plus an
  in-interpreter guard that refuses ``fork``/``exec``/``subprocess``/``ctypes``; a convenience,
  not the boundary).
- **Clean environment**: ``PATH``, ``HOME``, ``TMPDIR``, locale; nothing of the caller's
  environment (no API keys).
- stdout and stderr are captured separately and cut at ``max_output_chars`` with a marker.

**Native code** (``ctypes``, a C extension, a shared library the code writes itself): the
guard's refusal of ``import ctypes`` in the strict mode is a convenience, not the boundary;
code can undo it, and native code can make any system call the kernel allows. The sandbox's
promise against native code is what the kernel enforces: the namespaces and the filesystem
view (host files outside it cannot be opened), the dropped privileges and ``no_new_privs``
(no ``setuid``, no ``mount``), the rlimits (with ``allow_subprocess=False``, RLIMIT_NPROC
makes a native ``fork`` fail), the network namespace, the wall-clock kill of every process
it started. It does not promise what needs a system-call filter: there is no seccomp, so the
whole system-call surface of the kernel (and its bugs) is reachable, and inside its view the
code may do anything an unprivileged process may. With ``isolate=False`` native code has
the caller's user and files; only the rlimits hold (and the process-tree kill, unless the
code kills its supervisor, which runs as the same user).

Each result lists what was enforced in ``result.isolation``; a feature the kernel refused is
listed in ``result.isolation_missing`` and raises a :class:`SandboxIsolationWarning` (a run
that asked for no network fails, exit status 126, when a network namespace cannot be made).
``isolate=False`` turns the namespaces off (limits, guard and clean environment stay).
Not covered: a cgroup (memory is bounded by the address-space limit, processes by the
process limit), seccomp system-call filtering, and non-Linux systems (POSIX systems get the
limits only).
"""

from tooluse.execution.sandbox.limits import SandboxLimits, SandboxResult
from tooluse.execution.sandbox.process import SandboxIsolationWarning
from tooluse.execution.sandbox.run import arun_python, python_tool, run_python
from tooluse.execution.sandbox.session import PythonSandbox, SandboxSession

__all__ = [
    "PythonSandbox",
    "SandboxIsolationWarning",
    "SandboxLimits",
    "SandboxResult",
    "SandboxSession",
    "arun_python",
    "python_tool",
    "run_python",
]
