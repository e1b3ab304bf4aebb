"""A BFCL-style evaluation on the shipped sample.

Run: ``python examples/eval_bfcl.py`` (a scripted model that answers a few entries right and
the rest wrong) or ``python examples/eval_bfcl.py --local`` (the embedded model, slow).
The same from the command line: ``tooluse eval bfcl --model local --limit 2``.
"""

from __future__ import annotations

import sys

from tooluse import ScriptedBackend, ToolCall
from tooluse.evals import load_sample, run_bfcl

entries = load_sample(["simple", "irrelevance"])
print(f"entries: {len(entries)}")

if "--local" in sys.argv:
    from tooluse.local import LlamaCppBackend

    backend = LlamaCppBackend.default()
    entries = entries[:1] + entries[-1:]
else:
    # Right on the triangle entry, wrong (no call) on the other simple ones, and a
    # refusal on every irrelevance entry.
    turns: list[object] = [
        [ToolCall(name="calculate_triangle_area", arguments={"base": 10, "height": 5})]
    ]
    turns += ["I don't know."] * (len([e for e in entries if e.category == "simple"]) - 1)
    turns += ["None of these functions can help."] * len(
        [e for e in entries if e.category == "irrelevance"]
    )
    backend = ScriptedBackend(turns)  # type: ignore[arg-type]

report = run_bfcl(backend, entries, model="example")
print(report.format_table())
