"""Mutation run over the core modules: how many small deliberate bugs do the tests catch?

Each mutant is one small change to one module (a comparison flipped, ``and``/``or`` swapped, a
``not`` dropped, a constant changed, a statement removed, a returned value replaced by ``None``),
written into a private copy of ``src/``; only the tests mapped to that module group run against
it, with a per-mutant timeout. A mutant is *killed* when those tests fail (or hang), *survived*
when they pass. Each group samples at most ``MUTANTS`` mutants (default 40) with a fixed seed, so
runs are bounded and repeatable.

    python benchmarks/mutation.py [GROUP ...]      # or: make mutation MUTANTS=40

Prints the kill rate per group and writes ``benchmarks/results/mutation.json`` (with every
survivor, so a new test can be aimed at it). Survivors known to be equivalent (no behaviour
change is observable) are listed in ``EQUIVALENT`` with the reason, and left out of the
"non-equivalent" kill rate.
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

# Module group -> (modules under src/tooluse, the tests that exercise them).
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "tools": (
        ["tools/argument_validation.py", "tools/schema_export.py"],
        [
            "tests/tools/test_validation.py",
            "tests/tools/test_validation_hostile.py",
            "tests/tools/test_validation_semantics.py",
            "tests/tools/test_schema_export.py",
            "tests/tools/test_mutants_tools.py",
        ],
    ),
    "formats": (
        [
            "formats/lexer.py",
            "formats/json_scanner.py",
            "formats/hermes.py",
            "formats/pythonic.py",
            "formats/xml_params.py",
        ],
        [
            "tests/formats/test_formats.py",
            "tests/formats/test_hermes.py",
            "tests/formats/test_lexer_literals.py",
            "tests/formats/test_adversarial.py",
            # a linear-work check over a million markers: a minute of CPU per mutant
            "--deselect=tests/formats/test_adversarial.py"
            "::test_a_million_tool_call_markers_cost_linear_work",
            "tests/formats/test_streaming_arguments.py",
            "tests/formats/test_peer_defect_classes.py",
            "tests/formats/test_mutants_formats.py",
        ],
    ),
    "providers": (
        [
            "providers/openai_chat.py",
            "providers/openai_responses.py",
            "providers/anthropic.py",
            "providers/gemini.py",
            "providers/bedrock.py",
            "providers/bedrock_aws.py",
            "providers/history.py",
        ],
        [
            "tests/providers/test_wire_anthropic.py",
            "tests/providers/test_wire_bedrock.py",
            "tests/providers/test_wire_gemini.py",
            "tests/providers/test_wire_openai_chat.py",
            "tests/providers/test_wire_openai_responses.py",
            "tests/providers/test_wire_rules.py",
            "tests/providers/test_wire_conformance.py",
            "tests/providers/test_history_validation.py",
            "tests/providers/test_sigv4.py",
            "tests/providers/test_round_trips.py",
            "tests/providers/test_mutants_providers.py",
        ],
    ),
    "loop_core": (
        ["loop/core.py"],
        [
            "tests/test_loop.py",
            "tests/test_loop_properties.py",
            "tests/test_loop_text_mode.py",
            "tests/test_mutants_loop.py",
            "tests/test_resume_in_flight.py",
        ],
    ),
    "grammar": (
        ["local/grammar.py"],
        [
            "tests/local/test_grammar.py",
            "tests/local/test_grammar_conformance.py",
            "tests/local/test_mutants_grammar.py",
        ],
    ),
    "execution": (
        ["execution/local.py", "execution/sandbox/run.py", "execution/sandbox/limits.py"],
        [
            "tests/execution/test_local_executors.py",
            "tests/execution/test_sandbox.py",
            "tests/execution/test_sandbox_isolation.py",
            "tests/execution/test_tool_exit.py",
            "tests/execution/test_mutants_execution.py",
        ],
    ),
    "evals": (
        # the scorer; the runner's tests run the model over real data (minutes per mutant)
        ["evals/bfcl/checker.py"],
        [
            "tests/evals/test_bfcl_checker.py",
            "tests/evals/test_bfcl_parity.py",
            "tests/evals/test_mutants_evals.py",
        ],
    ),
}

# The six bugs of the issue that first slipped through: (name, module, text, replacement, the
# test that must now catch it). Run as the pseudo-group "named".
NAMED: list[tuple[str, str, str, str, str]] = [
    (
        "sandbox network isolation broken",
        "execution/sandbox/child.py",
        'if not self.config["allow_network"]:',
        'if self.config["allow_network"]:',
        "tests/execution/test_sandbox_isolation.py::test_loopback_connection_is_refused_by_default",
    ),
    (
        "SigV4 signs an empty body wrongly",
        "providers/bedrock_aws.py",
        "data=body,",
        'data=body or b"{}",',
        "tests/providers/test_sigv4.py::test_signer_matches_the_aws_vectors_for_an_empty_body",
    ),
    (
        "OpenAI strict export drops a oneOf",
        "tools/schema_export.py",
        '            key = "anyOf"\n',
        "            continue\n",
        "tests/tools/test_definition_conformance.py"
        "::test_openai_strict_export_keeps_every_oneof_branch",
    ),
    (
        "ambiguous enum coercion chooses a value",
        "tools/argument_validation.py",
        "if len(folded) == 1:",
        "if folded:",
        "tests/tools/test_validation_semantics.py::test_ambiguous_enum_case_match_is_refused",
    ),
    (
        "grammar forces the first optional property",
        "local/grammar.py",
        "            if req:\n",
        "            if req or i == 0:\n",
        "tests/local/test_grammar_conformance.py::test_optional_first_property_is_not_forced",
    ),
    (
        "BFCL reuses one call for two parallel expectations",
        "evals/bfcl/checker.py",
        "unused.remove(index)",
        "pass",
        "tests/evals/test_mutants_evals.py::test_parallel_never_matches_one_call_twice",
    ),
]

# Survivors judged equivalent: (module, function, operator, before, after) -> reason.
EQUIVALENT: dict[tuple[str, str, str, str, str], str] = {
    (
        "tools/argument_validation.py",
        "_allows_non_finite",
        "boundary",
        "seen < 10_000",
        "seen <= 10000",
    ): "a safety cap on a schema walk; one node more changes no answer",
    ("local/grammar.py", "minimal_instance", "change_str", '"#"', "'XX#'"): (
        "lstrip of a character set: a local $ref starts with '#/', so an added 'X' is never reached"
    ),
    ("local/grammar.py", "GrammarBuilder._ref", "change_str", '"#"', "'XX#'"): (
        "lstrip of a character set: a local $ref starts with '#/', so an added 'X' is never reached"
    ),
    ("formats/lexer.py", "MarkerMatch", "change_int", "0", "1"): (
        "the default is only used when no marker was found, and then marker_end is not read"
    ),
    (
        "formats/hermes.py",
        "HermesMachine._begin_block",
        "remove_statement",
        "self._closer = self.close_marker",
        "pass",
    ): "_closer is set to close_marker in __init__ and never assigned anything else",
    (
        "formats/json_scanner.py",
        "_Span.flush",
        "remove_statement",
        "self.start = end",
        "pass",
    ): "scan() resets every active span's start before each chunk; a flush inside a chunk is "
    "followed by closing the span",
    (
        "providers/gemini.py",
        "encode_request",
        "negate_comparison",
        "params.parallel_tool_calls is False",
        "params.parallel_tool_calls is not False",
    ): "guards only an informational log line",
}

# Calls whose string arguments are messages for people: changing them is not a behaviour bug.
MESSAGE_CALLS = {"warning", "info", "debug", "error", "exception", "warn", "print"}
FLIP = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


@dataclass(frozen=True, kw_only=True)
class Mutant:
    group: str
    module: str
    index: int  # position among the module's mutation points (stable for one source text)
    operator: str
    line: int
    function: str
    before: str
    after: str


@dataclass(frozen=True, kw_only=True)
class Outcome:
    mutant: Mutant
    status: str  # "killed" | "survived" | "timeout" | "invalid"
    seconds: float


def _annotate(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._parent = node  # type: ignore[attr-defined]


def _parent(node: ast.AST) -> ast.AST | None:
    return getattr(node, "_parent", None)


def _is_message(node: ast.AST) -> bool:
    """Inside a docstring, an f-string, an exception or a log message: text for people."""
    p = _parent(node)
    while p is not None:
        if isinstance(p, ast.JoinedStr | ast.Raise):
            return True
        if isinstance(p, ast.Expr) and isinstance(p.value, ast.Constant):
            return True
        if isinstance(p, ast.Call):
            f = p.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in MESSAGE_CALLS or name.endswith(("Error", "Exception", "Warning")):
                return True
        if isinstance(p, ast.stmt):
            return False
        p = _parent(p)
    return False


def _in_annotation(node: ast.AST) -> bool:
    p, child = _parent(node), node
    while p is not None:
        if isinstance(p, ast.arg | ast.AnnAssign) and child is p.annotation:
            return True
        if isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef) and child is p.returns:
            return True
        if isinstance(p, ast.stmt) and not isinstance(p, ast.AnnAssign):
            return False
        p, child = _parent(p), p
    return False


def _points(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """Every (node, operator) this harness can mutate, in a deterministic order."""
    out: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if _in_annotation(node):
            continue
        if isinstance(node, ast.Compare) and type(node.ops[0]) in FLIP:
            out.append((node, "negate_comparison"))
            if type(node.ops[0]) in BOUNDARY:
                out.append((node, "boundary"))
        elif isinstance(node, ast.BoolOp):
            out.append((node, "swap_and_or"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append((node, "drop_not"))
        elif isinstance(node, ast.Constant) and not _is_message(node):
            if isinstance(node.value, bool):
                out.append((node, "flip_bool"))
            elif type(node.value) is int:
                out.append((node, "change_int"))
            elif (
                isinstance(node.value, str)
                and node.value
                and not isinstance(_parent(node), ast.Expr)
            ):
                out.append((node, "change_str"))
        elif (
            isinstance(node, ast.Return)
            and node.value is not None
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        ):
            out.append((node, "return_none"))
        elif (
            isinstance(node, ast.Assign | ast.AugAssign | ast.Expr)
            and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
            and isinstance(
                _parent(node),
                ast.FunctionDef
                | ast.AsyncFunctionDef
                | ast.If
                | ast.For
                | ast.While
                | ast.With
                | ast.Try,
            )
        ):
            out.append((node, "remove_statement"))
    return out


def _mutate(node: ast.AST, operator: str) -> ast.AST:
    if operator == "negate_comparison":
        assert isinstance(node, ast.Compare)
        node.ops[0] = FLIP[type(node.ops[0])]()
    elif operator == "boundary":
        assert isinstance(node, ast.Compare)
        node.ops[0] = BOUNDARY[type(node.ops[0])]()
    elif operator == "swap_and_or":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif operator == "drop_not":
        assert isinstance(node, ast.UnaryOp)
        return node.operand
    elif operator == "flip_bool":
        assert isinstance(node, ast.Constant)
        node.value = not node.value
    elif operator == "change_int":
        assert isinstance(node, ast.Constant)
        node.value = node.value + 1 if node.value not in (0, 1) else 1 - node.value
    elif operator == "change_str":
        assert isinstance(node, ast.Constant)
        node.value = "XX" + node.value
    elif operator == "return_none":
        assert isinstance(node, ast.Return)
        node.value = ast.Constant(None)
    elif operator == "remove_statement":
        return ast.Pass()
    return node


def _replace(node: ast.AST, new: ast.AST) -> None:
    parent = _parent(node)
    assert parent is not None
    for field, value in ast.iter_fields(parent):
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is node:
                    value[i] = new
        elif value is node:
            setattr(parent, field, new)


def _function_of(node: ast.AST) -> str:
    names = []
    p = _parent(node)
    while p is not None:
        if isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(p.name)
        p = _parent(p)
    return ".".join(reversed(names)) or "<module>"


def count_points(source: str) -> int:
    return len(_points(_parsed(source)))


def mutants_of(
    group: str, module: str, source: str, indices: list[int]
) -> list[tuple[Mutant, str]]:
    """The chosen mutants of one module, each with its full mutated source text."""
    out = []
    for index in indices:
        tree = _parsed(source)
        node, operator = _points(tree)[index]
        before = ast.get_source_segment(source, node) or ast.unparse(node)
        new = _mutate(node, operator)
        if new is not node:
            _replace(node, new)
        ast.fix_missing_locations(tree)
        text = ast.unparse(tree)
        mutant = Mutant(
            group=group,
            module=module,
            index=index,
            operator=operator,
            line=getattr(node, "lineno", 0),
            function=_function_of(node),
            before=" ".join(before.split())[:160],
            after=" ".join(ast.unparse(new).split())[:160],
        )
        out.append((mutant, text))
    return out


def _parsed(source: str) -> ast.AST:
    tree = ast.parse(source)
    _annotate(tree)
    return tree


def _run_tests(copy: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    env = dict(os.environ, PYTHONPATH=str(copy / "src"), PYTHONDONTWRITEBYTECODE="1")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "--timeout",
        str(int(timeout)),
        *tests,
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        code = proc.wait(timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole session: pytest and its children
        proc.wait()
        return "timeout", time.perf_counter() - started
    seconds = time.perf_counter() - started
    if code == 0:
        return "survived", seconds
    # 4 (usage error) and 5 (no tests collected) say nothing about the mutant; an import error
    # at collection (2) is a caught mutant.
    return ("invalid" if code in (4, 5) else "killed"), seconds


def run_group(name: str, copy: Path, sample: int, seed: int, timeout: float) -> dict:
    modules, tests = GROUPS[name]
    tests = [t for t in tests if t.startswith("-") or (ROOT / t).exists()]
    sources = {m: (ROOT / "src" / "tooluse" / m).read_text() for m in modules}
    # Baseline: the tests must pass on the unparsed (comment-free) originals.
    for module, source in sources.items():
        (copy / "src" / "tooluse" / module).write_text(ast.unparse(ast.parse(source)))
    status, secs = _run_tests(copy, tests, timeout)
    print(f"[{name}] baseline {status} in {secs:.0f}s", flush=True)
    if status != "survived":
        for module, source in sources.items():
            (copy / "src" / "tooluse" / module).write_text(source)
        return {"group": name, "error": f"baseline {status}: the tests fail without mutants"}
    pool = [(m, i) for m in modules for i in range(count_points(sources[m]))]
    picked = sorted(random.Random(f"{seed}:{name}").sample(pool, min(sample, len(pool))))
    chosen = [
        pair
        for m in modules
        for pair in mutants_of(name, m, sources[m], [i for mm, i in picked if mm == m])
    ]
    outcomes: list[Outcome] = []
    for mutant, text in chosen:
        target = copy / "src" / "tooluse" / mutant.module
        target.write_text(text)
        try:
            status, secs = _run_tests(copy, tests, timeout)
        finally:
            target.write_text(ast.unparse(ast.parse(sources[mutant.module])))
        outcomes.append(Outcome(mutant=mutant, status=status, seconds=round(secs, 1)))
        print(
            f"[{name}] {status:8} {mutant.module}:{mutant.line} {mutant.operator} "
            f"{mutant.before!r} -> {mutant.after!r}",
            flush=True,
        )
    for module, source in sources.items():
        (copy / "src" / "tooluse" / module).write_text(source)
    valid = [o for o in outcomes if o.status != "invalid"]
    killed = [o for o in valid if o.status in ("killed", "timeout")]
    survivors = [o for o in valid if o.status == "survived"]
    equivalent = [o for o in survivors if _key(o.mutant) in EQUIVALENT]
    live = len(valid) - len(equivalent)
    return {
        "group": name,
        "pool": len(pool),
        "sampled": len(outcomes),
        "invalid": len(outcomes) - len(valid),
        "killed": len(killed),
        "survived": len(survivors),
        "equivalent": len(equivalent),
        "kill_rate": round(len(killed) / len(valid), 3) if valid else None,
        "kill_rate_non_equivalent": round(len(killed) / live, 3) if live else None,
        "survivors": [
            {**asdict(o.mutant), "equivalent": EQUIVALENT.get(_key(o.mutant))} for o in survivors
        ],
    }


def _passes_unmutated(copy: Path, test: str, timeout: float) -> bool:
    """The named test passes, and is not skipped, on the real source."""
    env = dict(os.environ, PYTHONPATH=str(copy / "src"), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", test]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout + 30
        )
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and "skipped" not in proc.stdout


def run_named(copy: Path, timeout: float) -> dict:
    """Each named mutant must make its named test fail."""
    rows = []
    for name, module, text, replacement, test in NAMED:
        target = copy / "src" / "tooluse" / module
        source = (ROOT / "src" / "tooluse" / module).read_text()
        node = ROOT / test.split("::")[0]
        if source.count(text) != 1:
            status = "mutant no longer applies"
        elif not node.exists():
            status = "test missing"
        elif not _passes_unmutated(copy, test, timeout):
            status = "test fails or skips without the mutant"
        else:
            target.write_text(source.replace(text, replacement))
            try:
                status, _ = _run_tests(copy, [test], timeout)
            finally:
                target.write_text(source)
            status = "caught" if status in ("killed", "timeout") else f"NOT caught ({status})"
        rows.append({"mutant": name, "module": module, "test": test, "status": status})
        print(f"[named] {status:18} {name}  <- {test}", flush=True)
    caught = sum(r["status"] == "caught" for r in rows)
    return {"group": "named", "caught": caught, "total": len(rows), "mutants": rows}


def _key(m: Mutant) -> tuple[str, str, str, str, str]:
    return (m.module, m.function, m.operator, m.before, m.after)


def main(argv: list[str]) -> int:
    names = argv or [*GROUPS, "named"]
    unknown = [n for n in names if n not in GROUPS and n != "named"]
    if unknown:
        print(f"unknown group(s): {', '.join(unknown)}; known: {', '.join(GROUPS)}")
        return 2
    sample = int(os.environ.get("MUTANTS", "40"))
    seed = int(os.environ.get("SEED", "16"))
    timeout = float(os.environ.get("MUTANT_TIMEOUT", "120"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tooluse-mutation-") as tmp:
        copy = Path(tmp)
        shutil.copytree(
            ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        reports = [
            run_named(copy, timeout) if n == "named" else run_group(n, copy, sample, seed, timeout)
            for n in names
        ]
    print(
        f"\n{'group':10} {'pool':>5} {'run':>4} {'killed':>6} {'surv':>5} {'equiv':>5} "
        f"{'kill%':>6} {'non-eq%':>7}"
    )
    for r in reports:
        if "error" in r:
            print(f"{r['group']:10} {r['error']}")
            continue
        if r["group"] == "named":
            print(f"{'named':10} {r['caught']} of {r['total']} named mutants caught")
            continue
        rate = "-" if r["kill_rate"] is None else f"{100 * r['kill_rate']:.0f}"
        live = (
            "-"
            if r["kill_rate_non_equivalent"] is None
            else (f"{100 * r['kill_rate_non_equivalent']:.0f}")
        )
        print(
            f"{r['group']:10} {r['pool']:5} {r['sampled'] - r['invalid']:4} {r['killed']:6} "
            f"{r['survived']:5} {r['equivalent']:5} {rate:>6} {live:>7}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = Path(os.environ.get("MUTATION_JSON", RESULTS / "mutation.json"))
    previous = json.loads(out.read_text()) if out.exists() else {}
    groups = {**previous.get("groups", {}), **{r["group"]: r for r in reports}}
    out.write_text(
        json.dumps(
            {
                "mutants_per_group": sample,
                "seed": seed,
                "seconds": round(time.perf_counter() - started),
                "groups": groups,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {out}")
    failed = any("error" in r for r in reports) or any(
        r["caught"] < r["total"] for r in reports if r["group"] == "named"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
