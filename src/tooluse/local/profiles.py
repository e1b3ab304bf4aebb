"""Per-model tool-calling profiles: how tools are shown to a local model and how it calls them.

A profile says which system prompt lists the tools, how one turn of tool calls is written
(the text the grammar forces and the parser reads back) and how tool results go back. SmolLM2's
chat template has no tools section, so its profile brings the system prompt the model was
tuned with and its ``<tool_call>[{...}, ...]</tool_call>`` list format; the Hermes profile
(one ``<tool_call>{...}</tool_call>`` per call) fits most other open models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tooluse.messages import ChatMessage, ToolCall
from tooluse.tools.definition import ToolDefinition

__all__ = ["HERMES", "PROFILES", "SMOLLM2", "ParsedTurn", "ToolPromptProfile", "profile_for"]

SMOLLM2_TOOL_PROMPT = """You are an expert in composing functions. You are given a question and a set of possible functions.
Based on the question, you will need to make one or more function/tool calls to achieve the purpose.
If none of the functions can be used, point it out and refuse to answer.
If the given question lacks the parameters required by the function, also point it out.

You have access to the following tools:
<tools>{tools}</tools>

The output MUST strictly adhere to the following format, and NO other text MUST be included.
The example format is as follows. Please make sure the parameter type is correct. If no function call is needed, please make the tool calls an empty list '[]'.
<tool_call>[
{{"name": "func_name1", "arguments": {{"argument1": "value1", "argument2": "value2"}}}},
... (more tool calls as required)
]</tool_call>"""

HERMES_TOOL_PROMPT = """You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. You may call one or more functions to assist with the user query. Don't make assumptions about what values to plug into functions.
<tools>
{tools}
</tools>
For each function call return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-dict>}}
</tool_call>"""


ResultsPrompt = Literal["plain", "instructed"]
# What a small model reads before answering from folded tool results: without it SmolLM2 often
# explains how to compute the answer instead of giving it.
ANSWER_FROM_RESULTS = (
    "You answer questions using the tool results given with them. "
    "Quote the values from the results. Reply in one short sentence."
)


@dataclass(frozen=True, kw_only=True)
class ParsedTurn:
    """Model output split into plain text and tool calls; ``errors`` keeps unreadable calls."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ToolPromptProfile:
    """How one model family is prompted with tools and writes its calls.

    - ``open``/``close`` wrap one turn of calls (list form) or each call (``list_form=False``);
      ``separator`` joins calls inside the wrapper (list form) or between wrappers.
    - ``tool_prompt`` is formatted with ``tools`` (the tools' JSON, one per line); the user's own
      system message, if any, follows it.
    - ``tool_result_role`` is the chat role that carries tool results back.
    - ``chat_template`` replaces the GGUF's template when set.
    - ``fold_results_in_text``: when the model answers in text (no tools shown), tool calls are
      left out and their results are appended to the user's message, which a small model
      answers far better than a separate tool turn.
    - ``results_prompt`` (with folding): ``"instructed"`` adds a short system instruction to
      answer from the results, in one sentence, and names the call each result answers;
      ``"plain"`` only appends the results. On the benchmark's answer set the final answer
      holds the tool's key value far more often when instructed (``bench_local``).
    """

    name: str
    tool_prompt: str
    open: str
    close: str
    separator: str
    list_form: bool
    start_marker: str = "<tool_call>"
    end_marker: str = "</tool_call>"
    tool_result_role: str = "tool"
    chat_template: str | None = None
    fold_results_in_text: bool = False
    results_prompt: ResultsPrompt = "instructed"

    # -- prompt side --------------------------------------------------------------------------

    def tools_json(self, tools: Sequence[ToolDefinition]) -> str:
        return "\n".join(json.dumps(tool.to_openai_schema(), ensure_ascii=False) for tool in tools)

    def system_prompt(self, tools: Sequence[ToolDefinition], user_system: str = "") -> str:
        prompt = self.tool_prompt.format(tools=self.tools_json(tools))
        return f"{prompt}\n\n{user_system}" if user_system else prompt

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        """The text of a turn of calls, exactly as the grammar lets the model write it."""
        bodies = [self.call_json(call.name, call.arguments) for call in calls]
        if self.list_form:
            return self.open + self.separator.join(bodies) + self.close
        return self.separator.join(self.open + body + self.close for body in bodies)

    @staticmethod
    def call_json(name: str, arguments: dict[str, Any]) -> str:
        return json.dumps(
            {"name": name, "arguments": arguments}, ensure_ascii=False, separators=(", ", ": ")
        )

    def to_template_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]
    ) -> list[dict[str, str]]:
        """Role/content dicts for the chat template, with the tools in the system prompt."""
        out: list[dict[str, str]] = []
        rest = list(messages)
        user_system = ""
        if rest and rest[0].role == "system":
            user_system = rest.pop(0).content
        folding = not tools and self.fold_results_in_text
        if folding and self.results_prompt == "instructed" and any(m.role == "tool" for m in rest):
            user_system = f"{ANSWER_FROM_RESULTS}\n\n{user_system}".strip()
        if tools:
            out.append({"role": "system", "content": self.system_prompt(tools, user_system)})
        elif user_system:
            out.append({"role": "system", "content": user_system})
        if folding:
            rest = fold_tool_results(rest, self.results_prompt)
        for message in rest:
            if message.role == "assistant" and message.tool_calls:
                text = message.content.strip()
                calls = self.render_calls(message.tool_calls)
                out.append({"role": "assistant", "content": f"{text}\n{calls}" if text else calls})
            elif message.role == "tool":
                out.append({"role": self.tool_result_role, "content": message.content})
            else:
                out.append({"role": message.role, "content": message.content})
        return out

    # -- output side --------------------------------------------------------------------------

    def parse_constrained(self, text: str) -> ParsedTurn:
        """Read output written under this profile's call grammar.

        The layout is known exactly, so markers inside argument strings cannot cut a call.
        Output cut short (``max_tokens``) falls back to :meth:`parse`, which reports it.
        """
        if self.list_form and text.startswith(self.open) and text.endswith(self.close):
            body = text[len(self.open) : len(text) - len(self.close)]
            calls, error = read_call_json(f"[{body}]")
            return ParsedTurn(text="", calls=tuple(calls), errors=(error,) if error else ())
        if not self.list_form and text.startswith(self.open) and text.endswith(self.close):
            wrapped = text.split(self.close + self.separator + self.open)
            wrapped[0] = wrapped[0][len(self.open) :]
            wrapped[-1] = wrapped[-1][: len(wrapped[-1]) - len(self.close)]
            calls = []
            errors = []
            for body in wrapped:
                found, error = read_call_json(body)
                calls.extend(found)
                if error:
                    errors.append(error)
            return ParsedTurn(text="", calls=tuple(calls), errors=tuple(errors))
        return self.parse(text)

    def calls_before_repeat(self, text: str) -> tuple[ToolCall, ...] | None:
        """For a turn of calls being written under the grammar: when the calls completed so
        far end with an exact repeat (same name and arguments) of an earlier one, the calls
        before that repeat; otherwise ``None``.

        A small model that starts repeating a call it already made in the same turn is
        looping: it goes on repeating until the call limit.
        """
        if self.list_form:
            end = text.rfind("}")
            if not text.startswith(self.open) or end < 0:
                return None
            # the token that closes a call may carry the separator that follows it
            calls, error = read_call_json(f"[{text[len(self.open) : end + 1]}]")
        else:
            if not text.endswith(self.close):
                return None
            parsed = self.parse_constrained(text)
            calls, error = list(parsed.calls), "; ".join(parsed.errors)
        if error or len(calls) < 2:
            return None
        last = calls[-1]
        if any(c.name == last.name and c.arguments == last.arguments for c in calls[:-1]):
            return tuple(calls[:-1])
        return None

    def parse(self, text: str) -> ParsedTurn:
        """Split model output into text and calls; unreadable call text stays in ``errors``.

        Lenient on layout: any JSON object or list of objects between the markers is read, so
        unconstrained output with other spacing parses too.
        """
        calls: list[ToolCall] = []
        errors: list[str] = []
        plain: list[str] = []
        pos = 0
        while True:
            start = text.find(self.start_marker, pos)
            if start < 0:
                plain.append(text[pos:])
                break
            plain.append(text[pos:start])
            end = text.find(self.end_marker, start + len(self.start_marker))
            body = text[start + len(self.start_marker) : end if end >= 0 else len(text)]
            pos = len(text) if end < 0 else end + len(self.end_marker)
            found, error = read_call_json(body)
            calls.extend(found)
            if error:
                errors.append(error)
        return ParsedTurn(text="".join(plain).strip(), calls=tuple(calls), errors=tuple(errors))


def fold_tool_results(
    messages: Sequence[ChatMessage], style: ResultsPrompt = "plain"
) -> list[ChatMessage]:
    """The conversation with tool turns folded into the user message they answer.

    ``"plain"`` appends ``Result of <tool>: <output>``; ``"instructed"`` appends
    ``Tool result (<tool>(<arguments>)): <output>``, naming the call the output answers, with
    a JSON object output written as ``key: value; ...``.
    """
    out: list[ChatMessage] = []
    last_user = -1
    calls: dict[str, ToolCall] = {}
    for message in messages:
        calls.update((call.id, call) for call in message.tool_calls)
        if message.role == "assistant" and message.tool_calls and not message.content.strip():
            continue
        if message.role == "tool" and last_user >= 0:
            name = message.name or (message.result.tool_name if message.result else "tool")
            user = out[last_user]
            answered = calls.get(message.tool_call_id or "")
            if style == "instructed":
                pairs = answered.arguments.items() if answered else ()
                args = ", ".join(f"{k}={v!r}" for k, v in pairs)
                line = f"Tool result ({name}({args})): {readable_result(message.content)}"
            else:
                line = f"Result of {name}: {message.content}"
            out[last_user] = ChatMessage(role="user", content=f"{user.content}\n\n{line}")
            continue
        if message.role == "assistant" and message.tool_calls:
            message = ChatMessage(role="assistant", content=message.content)
        out.append(message)
        if message.role == "user":
            last_user = len(out) - 1
    return out


def readable_result(output: str) -> str:
    """A JSON object result as ``key: value; ...`` (SmolLM2 quotes those values far more often
    than the same values inside JSON); any other output unchanged."""
    try:
        data = json.loads(output)
    except ValueError:
        return output
    if not isinstance(data, dict) or not data:
        return output
    return "; ".join(
        f"{key}: {value if isinstance(value, (str, int, float)) else json.dumps(value)}"
        for key, value in data.items()
    )


def read_call_json(body: str) -> tuple[list[ToolCall], str]:
    """Calls from the JSON between the markers: one object or a list of objects."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return [], f"tool call is not valid JSON ({exc.msg}): {body.strip()[:200]!r}"
    items = data if isinstance(data, list) else [data]
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return calls, f"tool call without a name: {json.dumps(item)[:200]}"
        args = item.get("arguments", item.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                calls.append(ToolCall(name=item["name"], raw_arguments=args))
                continue
        if not isinstance(args, dict):
            calls.append(ToolCall(name=item["name"], raw_arguments=json.dumps(args)))
            continue
        calls.append(ToolCall(name=item["name"], arguments=args))
    return calls, ""


# ChatML without the built-in default system prompt of SmolLM2's GGUF template: with that
# default system prompt the Q4_1 build answers plain questions in broken French ("capital of
# France?"), without it in correct English.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SMOLLM2 = ToolPromptProfile(
    name="smollm2",
    chat_template=CHATML_TEMPLATE,
    fold_results_in_text=True,
    tool_prompt=SMOLLM2_TOOL_PROMPT,
    open="<tool_call>[\n",
    close="\n]</tool_call>",
    separator=",\n",
    list_form=True,
)
HERMES = ToolPromptProfile(
    name="hermes",
    tool_prompt=HERMES_TOOL_PROMPT,
    open="<tool_call>\n",
    close="\n</tool_call>",
    separator="\n",
    list_form=False,
)
PROFILES: dict[str, ToolPromptProfile] = {p.name: p for p in (SMOLLM2, HERMES)}


def profile_for(model_name: str) -> ToolPromptProfile:
    """The profile for a model, from its GGUF name or file name (Hermes when unknown)."""
    lowered = model_name.lower()
    if "smollm" in lowered:
        return SMOLLM2
    return HERMES
