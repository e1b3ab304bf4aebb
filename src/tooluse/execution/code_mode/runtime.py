"""The program's side of code mode: runs inside the sandbox, never imported by tooluse.

:mod:`tooluse.execution.code_mode.host` sends this file's source as the first cell of a
sandbox session (so a spare interpreter has it loaded before any program exists), then one
cell ``_tooluse_main({...})`` per program. It

- compiles the program with top-level ``await`` allowed; a top-level ``return x`` and a final
  bare expression both end the program with that value (the program's return value);
- defines the tool functions (``async def``; their source comes from the host) in the
  program's own namespace, with ``asyncio``, ``json``, ``ToolError``, ``CallDenied`` and
  ``final_answer``;
- sends each call to the host as one JSON line on the channel pipe and resumes the awaiting
  coroutine when the host's answer line comes back (calls awaited together run together);
- tells the host when the program waits on nothing but the host (``{"op": "waiting"}``, with
  the number of answers received so far): an event loop whose selector would block with no
  timer pending can only be woken by an answer;
- ends with ``{"op": "end"}``: the return value, the final answer, or the error.

No ``from __future__``, no ``typing`` at run time: the child pays for every import.
"""

import ast
import asyncio
import builtins
import inspect
import json
import os
import selectors
import sys
import traceback

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROGRAM_FILE = "program.py"


class ToolError(Exception):
    """A tool call failed: the tool raised or refused, or the arguments were not valid."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.message = message


class CallDenied(ToolError):
    """The call was refused before it ran (by a person or by the approval policy)."""


class _Ended(BaseException):
    """Raised by a top-level ``return`` and by ``final_answer``: the program is done."""

    def __init__(self, value: object, final: bool) -> None:
        super().__init__()
        self.value = value
        self.final = final


def _return(value: object = None) -> "Any":
    raise _Ended(value, False)


def final_answer(answer: object) -> "Any":
    """End the program; ``answer`` becomes the answer to the user (no further model turn)."""
    raise _Ended(answer, True)


class _Channel:
    """The JSON-lines pipe pair to the host."""

    def __init__(self, out_fd: int, in_fd: int) -> None:
        self.out_fd = out_fd
        self.in_fd = in_fd
        self.sequence = 0
        self.waiting: dict[int, Any] = {}
        self.pending = b""
        self.answers = 0
        self.reported = -1
        self.loops: set[int] = set()
        self.closed = False

    def send(self, message: "dict[str, Any]") -> None:
        data = memoryview((json.dumps(message, ensure_ascii=False) + "\n").encode())
        while data:
            data = data[os.write(self.out_fd, data) :]

    async def call(self, tool: str, arguments: "dict[str, Any]") -> object:
        loop = asyncio.get_running_loop()
        if id(loop) not in self.loops:  # a loop the program made itself (asyncio.run)
            self.loops.add(id(loop))
            loop.add_reader(self.in_fd, self.readable)
        if self.closed:
            raise ToolError(tool, "the host stopped answering calls")
        try:
            text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{tool}: the arguments must be JSON values ({exc})") from None
        self.sequence += 1
        future = loop.create_future()
        self.waiting[self.sequence] = future
        self.send({"op": "call", "seq": self.sequence, "tool": tool, "args": json.loads(text)})
        return await future

    def readable(self) -> None:
        chunk = os.read(self.in_fd, 1 << 20)
        if not chunk:
            self.closed = True
            for future in self.waiting.values():
                if not future.done():
                    future.set_exception(ToolError("host", "the host stopped answering calls"))
            self.waiting.clear()
            return
        self.pending += chunk
        while b"\n" in self.pending:
            line, _, self.pending = self.pending.partition(b"\n")
            self.answer(json.loads(line))

    def answer(self, message: "dict[str, Any]") -> None:
        self.answers += 1
        future = self.waiting.pop(message["seq"], None)
        if future is None or future.done():
            return
        if message.get("ok"):
            future.set_result(message.get("value"))
        else:
            kind = CallDenied if message.get("kind") == "denied" else ToolError
            future.set_exception(kind(message.get("tool", ""), message.get("error", "")))

    def idle(self) -> None:
        """The loop is about to block with no timer: only an answer can wake it."""
        if self.waiting and self.reported != self.answers:
            self.reported = self.answers
            self.send({"op": "waiting", "answers": self.answers})


_CHANNEL: "list[_Channel]" = []


class _Selector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    def select(self, timeout: "float | None" = None) -> "Any":
        if timeout is None and _CHANNEL:
            _CHANNEL[0].idle()
        return super().select(timeout)


class _Policy(asyncio.DefaultEventLoopPolicy):  # type: ignore[misc,valid-type]
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.SelectorEventLoop(_Selector())


class _Returns(ast.NodeTransformer):
    """Top-level ``return x`` becomes ``_return(x)`` (function bodies are left alone)."""

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node: ast.Return) -> ast.AST:
        value = node.value if node.value is not None else ast.Constant(value=None)
        call = ast.Call(func=ast.Name(id="_return", ctx=ast.Load()), args=[value], keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)


def _compile(source: str) -> "Any":
    import linecache  # tracebacks show the program's lines

    linecache.cache[PROGRAM_FILE] = (len(source), None, source.splitlines(True), PROGRAM_FILE)
    tree = ast.parse(source, PROGRAM_FILE)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(ast.Return(value=last.value), last)
    tree = ast.fix_missing_locations(_Returns().visit(tree))
    return compile(tree, PROGRAM_FILE, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _namespace(stubs: str, channel: _Channel) -> "dict[str, Any]":
    made: list[Any] = []

    async def call(tool: str, arguments: "dict[str, Any]") -> object:
        return await channel.call(tool, arguments)

    def start(tool: str, arguments: "dict[str, Any]") -> "Any":
        coroutine = call(tool, arguments)
        made.append((tool, coroutine))
        return coroutine

    # the stubs' default for an optional argument the program leaves out (not sent)
    helpers: dict[str, Any] = {"__tooluse_call__": start, "__tooluse_unset__": object()}
    exec(compile(stubs, "tools.py", "exec"), helpers)
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "asyncio": asyncio,
        "json": json,
        "ToolError": ToolError,
        "CallDenied": CallDenied,
        "final_answer": final_answer,
        "_return": _return,
        "__tooluse_made__": made,
    }
    for name, value in helpers.items():
        if not name.startswith("__"):
            namespace[name] = value
    return namespace


def _program_traceback(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == PROGRAM_FILE]
    text = "".join(traceback.format_exception_only(type(exc), exc))
    if frames:
        text = (
            "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) + text
        )
    return text


def _unawaited(made: "list[Any]") -> "list[str]":
    """Tool calls the program made without ``await`` (they never ran); closed quietly."""
    names = []
    for tool, coroutine in made:
        if inspect.getcoroutinestate(coroutine) == inspect.CORO_CREATED:
            coroutine.close()
            names.append(tool)
    return names


def _run(code: "Any", namespace: "dict[str, Any]") -> None:
    outcome = eval(code, namespace)
    if inspect.iscoroutine(outcome):  # top-level await: run it on a loop that hears the host
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(outcome)
        finally:
            loop.close()


def _shown(value: object) -> "str | None":
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _tooluse_main(config: "dict[str, Any]") -> None:
    channel = _Channel(config["out_fd"], config["in_fd"])
    _CHANNEL[:] = [channel]
    asyncio.set_event_loop_policy(_Policy())
    end: dict[str, Any] = {"op": "end"}
    namespace = _namespace(config["stubs"], channel)
    value: object = None
    final = False
    try:
        _run(_compile(config["source"]), namespace)
    except _Ended as ended:
        value, final = ended.value, ended.final
    except SystemExit as exc:
        if exc.code not in (None, 0):
            end["error"] = f"SystemExit({exc.code!r})"
    except BaseException as exc:  # the program's own failure: its traceback is the answer
        sys.stdout.flush()
        sys.stderr.write(_program_traceback(exc))
        end["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    shown = _shown(value)
    if shown is not None:
        end["final" if final else "value"] = shown
    forgotten = _unawaited(namespace["__tooluse_made__"])
    if forgotten:
        end["unawaited"] = forgotten
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        channel.send(end)
    except (OSError, ValueError):
        pass  # the program closed its own pipes: the host sees it ended without a word
