"""Load a mapping file: YAML → ``Mapping``, with errors that point at the file, line and key.

``load_mapping(None)`` loads the packaged ``default.yaml``. The mapping files live once, in the repository's
``mappings/`` folder; ``foundry_bridge/resources/mappings`` is a symlink to it, so the same files are read in an
editable install and copied into a built wheel as package data (``importlib.resources``).

Nothing is expanded here: ``${VAR}`` stays as written until ``build_plan`` (see ``expand_env``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping as TMapping
from collections.abc import MutableMapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._text import did_you_mean
from ..errors import MappingError
from ._lines import LineOf, dotted, key_line
from .model import Mapping, available_fields

__all__ = [
    "MAPPINGS_PACKAGE_DIR",
    "ParamTypeError",
    "defaults_taken",
    "expand_env",
    "expand_param",
    "load_mapping",
    "mapping_from_dict",
    "mapping_line_finder",
    "packaged_mapping_path",
    "param_type_problem",
]

MAPPINGS_PACKAGE_DIR = ("resources", "mappings")


def packaged_mapping_path(name: str = "default.yaml") -> Path:
    """Path of a mapping shipped with the package (``default.yaml``, ``trec.yaml``, ``custom_fields.yaml``)."""
    ref = resources.files("foundry_bridge").joinpath(*MAPPINGS_PACKAGE_DIR, name)
    return Path(str(ref))


def load_mapping(path: str | os.PathLike[str] | None = None) -> Mapping:
    """Read and validate a YAML mapping file; ``None`` → the packaged ``default.yaml``.

    Raises ``MappingError`` (file, line, field path, did-you-mean for unknown keys) on bad YAML or bad keys, and on
    YAML beyond the bounds of ``foundry_bridge._yaml`` (alias bombs, deep nesting, a key written twice).
    """
    from .._yaml import load_bounded
    from ..dataset._json import line_and_offset, utf8_error
    from .azd import is_azd_config, mapping_data_from_azd

    file = packaged_mapping_path() if path is None else Path(path)
    try:
        raw = file.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise MappingError("mapping file not found", file=str(file)) from None
    except OSError as exc:
        raise MappingError(f"cannot read mapping file: {exc.strerror}", file=str(file)) from None
    except UnicodeDecodeError as exc:
        line, offset = line_and_offset(raw, exc.start)
        bad = utf8_error(exc, offset)
        raise MappingError(bad.message, file=str(file), line=line, hint=bad.hint) from None
    data, node = load_bounded(text, file=str(file))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MappingError("a mapping file must be a YAML mapping (key: value) at the top level", file=str(file))
    if is_azd_config(data):  # azd ai eval's evals/azure.eval.yaml (mapping.azd)
        data, line_of = mapping_data_from_azd(data, file=str(file), node=node, text=text)
        return mapping_from_dict(data, file=str(file), line_of=line_of)
    return mapping_from_dict(data, file=str(file), node=node)


def mapping_line_finder(file: str | None) -> LineOf | None:
    """A function key path of the mapping → line in ``file`` (a YAML mapping, an azd eval file, or JSON criteria,
    which is YAML too); None without a file or when it cannot be read again."""
    if file is None:
        return None
    from .._yaml import compose_bounded
    from .azd import azd_line_finder, is_azd_node

    try:
        text = Path(file).read_text(encoding="utf-8")
        node = compose_bounded(text, file=file, duplicate_keys=[])
    except (OSError, UnicodeDecodeError, MappingError):  # the file was read before; lines are a nicety
        return None
    if is_azd_node(node):
        return azd_line_finder(node, text, file=file)
    return lambda loc: key_line(node, loc)


def mapping_from_dict(
    data: dict[str, Any], *, file: str | None = None, node: Any = None, line_of: LineOf | None = None
) -> Mapping:
    """Validate a parsed mapping; the first problem becomes a ``MappingError`` located by ``line_of(key path)``,
    else via the YAML ``node``. An ``init_alias`` error is located at the key it names."""
    try:
        mapping = Mapping.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        if err["type"] == "init_alias":  # EvaluatorEntry names the key
            loc = (*loc, err["ctx"]["key"])
        field = dotted(loc)
        line = line_of(loc) if line_of is not None else key_line(node, loc)
        if err["type"] == "extra_forbidden":
            key = str(loc[-1])
            known = _known_keys(loc[:-1])
            guess = did_you_mean(key, known) if known else None
            hint = f"did you mean {guess!r}?" if guess else (f"known keys: {', '.join(known)}" if known else None)
            raise MappingError(f"unknown key {key!r}", file=file, line=line, field=field, hint=hint) from None
        if err["type"] == "missing":
            raise MappingError("required key is missing", file=file, line=line, field=field) from None
        raise MappingError(err["msg"], file=file, line=line, field=field) from None
    _check_response_id(mapping, file, node)
    return mapping


def _check_response_id(mapping: Mapping, file: str | None, node: Any) -> None:
    """``response_id`` names an extra item field the mapping reads (``model.available_fields``: for TREC input,
    extras come only with ``trec.responses``)."""
    name = mapping.response_id
    if name is None:
        return
    extras = [f for f in available_fields(mapping) if f in mapping.dataset.fields.extra]
    if name in extras:
        return
    guess = did_you_mean(name, extras)
    if guess:
        hint = f"did you mean {guess!r}?"
    elif name in mapping.dataset.fields.extra:
        hint = "TREC input reads extra fields only from trec.responses: name that file"
    else:
        hint = f"declare it under dataset.fields.extra: {{{name}: <dotted path in a row>}}"
    raise MappingError(
        f"{name!r} is not an extra item field of this mapping",
        file=file,
        line=key_line(node, ("response_id",)),
        field="response_id",
        hint=hint,
    )


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the pydantic model found at ``loc`` (for did-you-mean)."""
    from pydantic import BaseModel

    model: Any = Mapping
    for part in loc:
        if isinstance(part, int):
            continue
        info = model.model_fields.get(str(part)) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if info is None:
            return []
        ann = info.annotation
        model = _model_in(ann)
        if model is None:
            return []
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _model_in(ann: Any) -> Any:
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in get_args(ann):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")


def expand_env(value: Any, *, environ: MutableMapping[str, str] | None = None, where: str | None = None) -> Any:
    """Expand ``${VAR}`` and ``${VAR:-default}`` in strings, recursively through lists and dicts.

    ``${VAR:-default}`` uses the default when VAR is unset or empty (as in POSIX shells). An unset ``${VAR}``
    without default raises ``MappingError``. A string that is exactly one reference keeps the variable's text.
    """
    env = os.environ if environ is None else environ
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            got = env.get(name)
            if got:  # an empty variable counts as unset (the rule ``defaults_taken`` reads too)
                return got
            if default is not None:
                return default
            raise MappingError(
                f"environment variable {name} is not set",
                field=where,
                hint=f"export {name}=... or write ${{{name}:-default}} in the mapping",
            )

        return _ENV.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_env(v, environ=env, where=f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, environ=env, where=where) for v in value]
    return value


def defaults_taken(value: Any, *, environ: TMapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(VAR, default)`` for each ``${VAR:-default}`` in ``value`` (strings, lists, dicts) whose default
    ``expand_env`` takes — VAR unset or empty: the values a mapping only guessed."""
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        return [
            (m.group(1), m.group(2)) for m in _ENV.finditer(value) if m.group(2) is not None and not env.get(m.group(1))
        ]
    if isinstance(value, dict):
        return [d for v in value.values() for d in defaults_taken(v, environ=env)]
    if isinstance(value, list):
        return [d for v in value for d in defaults_taken(v, environ=env)]
    return []


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string"}


class ParamTypeError(MappingError):
    """A lone ``${VAR}`` for an int/float parameter expanded to text that is not of that type."""


def expand_param(
    value: Any, ptype: type | None, *, environ: dict[str, str] | None = None, where: str | None = None
) -> Any:
    """``expand_env`` for one initialization parameter whose catalog type is ``ptype``.

    A string that is exactly one ``${VAR}`` / ``${VAR:-default}`` reference, for an int or float parameter, becomes
    that type (``"${LMAX:-3}"`` → ``3``); ``MappingError`` if the expanded text does not parse. Anything else is
    expanded as ``expand_env`` does and keeps its type (``param_type_problem`` judges it).
    """
    out = expand_env(value, environ=environ, where=where)
    if ptype not in (int, float) or not isinstance(value, str) or not _ENV.fullmatch(value) or not isinstance(out, str):
        return out
    try:
        return ptype(out.strip())
    except ValueError:
        raise ParamTypeError(
            f"{value} expands to {out!r}, which is not {_TYPE_NAMES[ptype]}",
            field=where,
            hint=f"set the variable (or the default after :-) to {_TYPE_NAMES[ptype]}"
            + (", e.g. 3 (no decimal point)" if ptype is int else ", e.g. 0.5"),
        ) from None


def param_type_problem(value: Any, ptype: type | None) -> tuple[str, str] | None:
    """(message, hint) when ``value`` does not fit the catalog type ``ptype`` (int, float or str); None if it does.

    int needs a real integer (not a bool); float accepts an int or a float (not a bool); str needs a string.
    """
    if ptype is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif ptype is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif ptype is str:
        ok = isinstance(value, str)
    else:
        return None
    if ok:
        return None
    message = f"must be {_TYPE_NAMES[ptype]}, got {type(value).__name__} {value!r}"
    if ptype is str:
        hint = "quote the value"
    elif isinstance(value, str):
        hint = f"write it without quotes{', e.g. 3' if ptype is int else ', e.g. 0.5'} (a ${{VAR}} alone is converted)"
    elif ptype is int and isinstance(value, float):
        finite = value == value and abs(value) != float("inf")
        hint = f"write a whole number, e.g. {int(value)}" if finite else f"write {_TYPE_NAMES[ptype]}"
    else:
        hint = f"write {_TYPE_NAMES[ptype]}"
    return message, hint
