"""The class-based ``Tool`` (interlens style): a ``name``, a ``schema`` and ``__call__``.

Subclasses either write ``schema`` by hand (an OpenAI-style function schema, validated as raw
JSON Schema) or leave it out, in which case it is generated from the ``__call__`` signature
and docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from tooluse.tools.definition import ToolDefinition

__all__ = ["Tool"]


class Tool:
    """Base class for tools written as classes.

    Set ``name`` (and optionally ``description``/``is_terminal``) as class attributes and
    implement ``__call__``. ``schema`` returns the OpenAI Chat function schema; override it to
    hand-write the schema. ``definition`` is the neutral :class:`ToolDefinition`.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    is_terminal: ClassVar[bool] = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

    def _has_own_schema(self) -> bool:
        return type(self).schema is not Tool.schema

    @property
    def tool_name(self) -> str:
        """``name``, or the class name when ``name`` is empty."""
        return self.name or type(self).__name__

    @property
    def definition(self) -> ToolDefinition:
        """The neutral definition, built once per instance."""
        cached = self.__dict__.get("_tooluse_definition")
        if cached is None:
            cached = self._build_definition()
            self.__dict__["_tooluse_definition"] = cached
        return cached

    def _build_definition(self) -> ToolDefinition:
        from tooluse.tools.definition import ToolDefinition
        from tooluse.tools.schema_dict import definition_from_schema_dict

        if self._has_own_schema():
            base = definition_from_schema_dict(self.schema)
            return ToolDefinition.from_schema(
                base.name,
                base.parameters_schema,
                description=base.description or self.description,
                function=self,
                is_terminal=self.is_terminal,
            )
        return ToolDefinition.from_callable(
            self,
            name=self.tool_name,
            description=self.description or None,
            is_terminal=self.is_terminal,
        )

    @property
    def schema(self) -> dict[str, Any]:
        """OpenAI Chat function schema (generated from ``__call__`` unless overridden)."""
        return self.definition.to_openai_schema()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.tool_name!r})"
