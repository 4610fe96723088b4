"""The public modules' ``__all__`` names every entry point they define, so that ``from
msglc.api import *`` and the documentation tools see the whole API."""

import inspect

import msglc
import msglc.api


def test_api_all_lists_every_public_function():
    defined = {
        name
        for name, obj in vars(msglc.api).items()
        if inspect.isfunction(obj) and obj.__module__ == "msglc.api" and not name.startswith("_")
    }
    assert defined <= set(msglc.api.__all__), (
        f"missing from msglc.api.__all__: {sorted(defined - set(msglc.api.__all__))}"
    )


def test_star_import_of_api_gives_concat():
    names: dict[str, object] = {}
    exec("from msglc.api import *", names)
    assert names["concat"] is msglc.concat
