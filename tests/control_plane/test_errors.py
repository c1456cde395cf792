"""The error tree drawn in control_plane/errors.py is the tree the module defines."""

from __future__ import annotations

import inspect

from control_plane import errors
from ladder_process.errors import LadderError


def test_the_drawn_tree_names_every_error_with_its_code_under_its_parent() -> None:
    drawn = {}
    for line in (errors.__doc__ or "").splitlines():
        fields = line.replace("│", " ").replace("├──", " ").replace("└──", " ").split()
        if fields and fields[0].endswith("Error"):
            drawn[fields[0]] = (line.index(fields[0]), fields[1] if len(fields) > 1 else "")
    defined = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, LadderError) and cls.__module__ == errors.__name__
    }
    public = {name for name in defined if not name.startswith("_")}
    assert public <= set(drawn), f"not drawn: {sorted(public - set(drawn))}"
    for name in public:
        cls = defined[name]
        column, code = drawn[name]
        if name != "ApiError":
            assert code == cls.code, name
        parent = next(base for base in cls.__mro__[1:] if not base.__name__.startswith("_"))
        if parent.__name__ in drawn:
            assert column > drawn[parent.__name__][0], f"{name} is not drawn under {parent.__name__}"
