"""The public surface is exactly ``__all__``: every public name is listed, and every listed name exists."""

import importlib
import types

import tooluse


def test_all_lists_exactly_the_public_names():
    public = {
        name
        for name, value in vars(tooluse).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert sorted(set(tooluse.__all__) - {"__version__"}) == sorted(public)


def test_all_is_sorted_and_unique():
    names = [n for n in tooluse.__all__ if n != "__version__"]
    assert names == sorted(names)
    assert len(names) == len(set(names))


def test_every_subpackage_all_resolves():
    for mod in [
        "tooluse.errors",
        "tooluse.messages",
        "tooluse.events",
        "tooluse.tools",
        "tooluse.providers",
    ]:
        m = importlib.import_module(mod)
        for name in m.__all__:
            assert hasattr(m, name), f"{mod}.{name}"
