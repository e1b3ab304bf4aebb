"""BFCL's format_sensitivity category: its entries, its 26 system prompts and the decoding of
replies, each compared with bfcl-eval's own functions; runs through the normal eval path."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections import Counter
from xml.sax.saxutils import escape, quoteattr

import pytest
from bfcl_official import MODEL, official_modules
from bfcl_variants import oracle_calls

from tooluse import ScriptedBackend
from tooluse.evals.bfcl import load_bfcl_category
from tooluse.evals.bfcl.checker import check_entry
from tooluse.evals.bfcl.format_sensitivity import (
    FORMAT_CONFIGS,
    PromptFormat,
    decode_formatted_reply,
    format_sensitivity_summary,
    format_system_prompt,
    scoring_category,
)
from tooluse.evals.bfcl.job import BFCLOptions, run_bfcl_job
from tooluse.evals.bfcl.scorer import bfcl_system_prompt


@pytest.fixture(scope="module")
def official():
    with official_modules() as modules:
        yield modules


@pytest.fixture(scope="module")
def entries():
    return load_bfcl_category("format_sensitivity")


def test_entries_and_their_order_are_bfcl_evals(official, entries):
    from bfcl_eval.utils import load_format_sensitivity_test_cases  # with the stand-ins

    theirs = load_format_sensitivity_test_cases()
    assert [e.id for e in entries] == [t["id"] for t in theirs]
    assert len(entries) == 5200 and len(FORMAT_CONFIGS) == 26
    assert {e.category for e in entries} == {"format_sensitivity"}
    assert entries[0].ground_truth and entries[0].id.startswith("format_sensitivity_0:ret_fmt=")
    assert scoring_category(entries[0].category, entries[0].id) == entries[0].id.split(":")[-1]


def test_every_system_prompt_is_bfcl_evals(official, entries):
    from bfcl_eval.utils import load_format_sensitivity_test_cases

    theirs = {t["id"]: t["function"] for t in load_format_sensitivity_test_cases()}
    mismatches = [
        e.id
        for e in entries
        if format_system_prompt(e.id.split(":")[1], e.functions)
        != official.prompts.formulate_system_prompt(e.id.split(":")[1], theirs[e.id])
    ]
    assert mismatches == []
    # the default format is the prompt of tooluse's bfcl prompt style
    default = (
        "ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=classic"
    )
    assert format_system_prompt(default, entries[0].functions) == bfcl_system_prompt(
        entries[0].functions
    )


# -- replies in each format --------------------------------------------------------------------

_XML_TYPE = {str: "string", bool: "boolean", int: "integer", float: "float", list: "array"}


def _xml_type(value):
    return _XML_TYPE.get(type(value), "dict")


def _xml_text(value):
    return value if isinstance(value, str) else repr(value)


def render(calls, config: PromptFormat) -> str:
    """The calls written the way the format asks for them."""
    ret = config.return_format
    if ret == "python":
        body = ", ".join(
            f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})"
            for c in calls
            for n, a in c.items()
        )
        text = f"[{body}]"
    elif ret == "json":
        payload = [{"function": n, "parameters": a} for c in calls for n, a in c.items()]
        text = f"```json\n{json.dumps(payload)}\n```"
    else:
        functions = []
        for call in calls:
            for name, arguments in call.items():
                if ret == "verbose_xml":
                    params = "".join(
                        f"<param name={quoteattr(k)} value={quoteattr(_xml_text(v))} "
                        f'type="{_xml_type(v)}"/>'
                        for k, v in arguments.items()
                    )
                    functions.append(
                        f"<function name={quoteattr(name)}><params>{params}</params></function>"
                    )
                else:
                    params = "".join(
                        f'<param name={quoteattr(k)} type="{_xml_type(v)}">{escape(_xml_text(v))}</param>'
                        for k, v in arguments.items()
                    )
                    functions.append(f"<function name={quoteattr(name)}>{params}</function>")
        text = f"<functions>{''.join(functions)}</functions>"
    return f"<TOOLCALL>{text}</TOOLCALL>" if config.tool_call_tag else text


def replies(entry):
    """``(label, reply)``: the right calls in the entry's format, and broken replies."""
    config = PromptFormat.parse(entry.id.split(":")[1])
    calls = oracle_calls(entry)
    right = render(calls, config)
    out = [("right", right), ("prose", "I would call the function with those values.")]
    out.append(("truncated", right[: len(right) // 2]))
    out.append(("first_call_only", render(calls[:1], config)))
    if config.tool_call_tag:
        out.append(("untagged", render(calls, dataclasses.replace(config, tool_call_tag=False))))
    return out


def _official_decode(official, reply, config):
    try:
        decoded = official.prompts.default_decode_ast_prompting(
            reply, official.ReturnFormat(config.return_format), config.tool_call_tag
        )
    except Exception:  # bfcl-eval records any decoding failure as a wrong entry
        return None
    from bfcl_eval.utils import is_function_calling_format_output

    return decoded if is_function_calling_format_output(decoded) else None


def test_decoding_and_verdicts_agree_with_bfcl_eval_on_every_entry(official, entries):
    decode_mismatches, verdict_mismatches = [], []
    right: Counter[str] = Counter()
    total = 0
    for entry in entries:
        config = PromptFormat.parse(entry.id.split(":")[1])
        category = scoring_category(entry.category, entry.id)
        for label, reply in replies(entry):
            ours = decode_formatted_reply(reply, config)
            theirs = _official_decode(official, reply, config)
            if ours != theirs:
                decode_mismatches.append((entry.id, label, ours, theirs))
                continue
            total += 1
            if ours is None:
                continue
            verdict = check_entry(category, entry.functions, ours, entry.ground_truth).valid
            official_verdict = official.checker.ast_checker(
                copy.deepcopy(list(entry.functions)),
                copy.deepcopy(theirs),
                copy.deepcopy(list(entry.ground_truth)),
                official.Language.PYTHON,
                category,
                MODEL,
            )["valid"]
            if verdict and label == "right":
                right[config.return_format] += 1
            if verdict != official_verdict:
                verdict_mismatches.append((entry.id, label, verdict, official_verdict))
    assert decode_mismatches == []
    assert verdict_mismatches == []
    assert total >= 5200 * 4
    # the right replies are right in every format (a few answers BFCL itself rejects)
    assert right["python"] == 1600 and right["json"] >= 1190
    assert right["verbose_xml"] == right["concise_xml"] == 1200


def test_summary_gives_accuracy_per_format_and_bfcls_spread():
    records = [
        {
            "id": f"format_sensitivity_{i}:{FORMAT_CONFIGS[i % 2]}:x_{i}",
            "category": "format_sensitivity",
            "valid": v,
        }
        for i, v in enumerate([True, True, True, False])
    ]
    summary = format_sensitivity_summary(records)
    assert summary["formats"][FORMAT_CONFIGS[0]]["accuracy"] == 1.0
    assert summary["formats"][FORMAT_CONFIGS[1]]["accuracy"] == 0.5
    assert (
        summary["max_delta"] == 50.0 and summary["std"] == 35.36 and summary["variance"] == 1250.0
    )
    assert len(summary["missing_formats"]) == 24
    assert format_sensitivity_summary([{"category": "parallel", "valid": True}]) is None


def test_scripted_model_answers_three_formats_through_the_job(entries, tmp_path):
    picked = entries[:3]  # one entry under the first three formats
    turns = [
        render(oracle_calls(picked[0]), PromptFormat.parse(picked[0].id.split(":")[1])),
        "[no calls here",
        render(oracle_calls(picked[2]), PromptFormat.parse(FORMAT_CONFIGS[5])),  # wrong format
    ]
    backend = ScriptedBackend(turns)
    summary = run_bfcl_job(
        picked,
        "scripted",
        BFCLOptions(),
        tmp_path,
        progress=False,
        backend_factory=lambda m: backend,
    )
    records = {
        r["id"]: r for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())
    }
    assert [records[e.id]["valid"] for e in picked] == [True, False, False]
    assert records[picked[1].id]["error_type"] == "decoder_failed"
    # each request carried its own format's system prompt and no native tools
    for request, entry in zip(backend.requests, picked, strict=True):
        assert request.tools == ()
        config = entry.id.split(":")[1]
        assert request.messages[0].content.startswith(format_system_prompt(config, entry.functions))
    sensitivity = summary["format_sensitivity"]
    assert list(sensitivity["formats"]) == list(FORMAT_CONFIGS[:3])
    assert "format_sensitivity" not in summary["bfcl_score"]["unscored"]
