"""Every public name has a docstring: the API reference is generated from them.

Public: each name in the ``__all__`` of ``agent_transcript``, ``agent_transcript.fleet``,
``agent_transcript.formats`` and each integration module whose framework is
installed, and, for a class among them, each attribute its own body defines
whose name does not start with ``_`` (methods, properties, class methods). A
method that overrides a base class's documented one (a framework's hook, such
as the OpenAI Agents SDK's ``RunHooks.on_tool_start``) has that docstring.
A constant (a str, a tuple, ...) is documented by its ``#:`` comment on the
page, not by a docstring, and is not checked here.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from types import ModuleType
from typing import Any

import pytest

MODULES = ["agent_transcript", "agent_transcript.fleet", "agent_transcript.formats"]
INTEGRATIONS = {
    "agent_transcript.integrations.openai_agents": "agents",
    "agent_transcript.integrations.pydantic_ai": "pydantic_ai",
    "agent_transcript.integrations.agent_framework": "agent_framework",
    "agent_transcript.integrations.strands": "strands",
}


def documentable(value: Any) -> bool:
    """A function, class or property: something a docstring belongs to."""
    return inspect.isclass(value) or inspect.isroutine(value) or isinstance(value, property)


def own_docstring(value: Any) -> str | None:
    """The docstring ``value`` itself has (not one a dataclass or a base class made up)."""
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    if inspect.isclass(value):
        doc = value.__dict__.get("__doc__")
        # A dataclass without a docstring gets its signature as one.
        return None if doc and doc.startswith(f"{value.__name__}(") else doc
    doc: str | None = value.__doc__
    return doc


def inherited_docstring(cls: type, attr: str) -> str | None:
    """The docstring of the member ``attr`` of the nearest base class that documents it."""
    for base in cls.__mro__[1:]:
        if attr in vars(base):
            doc = own_docstring(vars(base)[attr])
            if doc and doc.strip():
                return doc
    return None


def undocumented(module: ModuleType) -> list[str]:
    """The public names of ``module`` without a docstring of their own."""
    missing = []
    for name in module.__all__:
        value = getattr(module, name)
        if not documentable(value):
            continue
        if not (own_docstring(value) or "").strip():
            missing.append(f"{module.__name__}.{name}")
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if attr.startswith("_"):
                    continue
                if isinstance(member, (classmethod, staticmethod)) or documentable(member):
                    if not (own_docstring(member) or inherited_docstring(value, attr) or "").strip():
                        missing.append(f"{module.__name__}.{name}.{attr}")
    return missing


@pytest.mark.parametrize("module_name", MODULES + sorted(INTEGRATIONS))
def test_every_public_name_has_a_docstring(module_name: str) -> None:
    framework = INTEGRATIONS.get(module_name)
    if framework and importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} has no module docstring"
    assert undocumented(module) == []


def test_a_missing_docstring_is_found() -> None:
    """The walk sees a class's methods, not only the names in ``__all__``."""
    fake = ModuleType("fake")

    class Documented:
        """Has one."""

        def method(self) -> None:
            pass

        @property
        def prop(self) -> int:
            return 1

    def function() -> None:
        pass

    class Base:
        """A framework's base class."""

        def hook(self) -> None:
            """Called by the framework."""

    class Override(Base):
        """Overrides a documented hook, adds an undocumented method."""

        def hook(self) -> None:
            pass

        def extra(self) -> None:
            pass

    fake.Documented, fake.function, fake.CONSTANT = Documented, function, "x"  # type: ignore[attr-defined]
    fake.Override = Override  # type: ignore[attr-defined]
    fake.__all__ = ["Documented", "function", "CONSTANT", "Override"]  # type: ignore[attr-defined]
    assert undocumented(fake) == ["fake.Documented.method", "fake.Documented.prop", "fake.function",
                                  "fake.Override.extra"]
