"""Turning pydantic validation errors into one-line config issues, for every kind of config.

Each error is located in the file its value came from (refs expanded), with pydantic's
discriminator tags dropped from the path, the model's valid keys listed for an unknown key, and
a removed key's reason given instead.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from pdbench.core.config import AGENT_TYPES, Strict
from pdbench.core.payoff import PayoffError
from pdbench.errors import ConfigIssue
from pdbench.runners.config.resolve import Loc, Resolved


def _union_models(annotation: Any) -> list[type[BaseModel]]:
    """The models of a (possibly Annotated or Optional) union annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _union_models(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [
            a
            for a in typing.get_args(annotation)
            if isinstance(a, type) and issubclass(a, BaseModel)
        ]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _pick(models: list[type[BaseModel]], node: Any) -> type[BaseModel] | None:
    """The model of a union that applies to `node` (by its `type` tag when there are several)."""
    if len(models) == 1:
        return models[0]
    if isinstance(node, dict) and "type" in node:
        for model in models:
            tag = model.model_fields.get("type")
            if tag is not None and node["type"] in typing.get_args(tag.annotation):
                return model
    return None


def walk(root: type[BaseModel], loc: tuple[Any, ...], data: Any) -> tuple[Loc, Any, Any]:
    """(location without discriminator tags, the model valid at its end or None, the field's
    annotation there or None).

    Pydantic puts the tag of a discriminated union (policy, llm, axelrod, human) into an error's
    location right after the union's field; it is not the user's key, so it is dropped.
    """
    model: type[BaseModel] | None = root
    annotation: Any = None
    node = data
    union: list[type[BaseModel]] = []  # the union just stepped into, if any
    out: list[str | int] = []
    for part in loc:
        if union and isinstance(part, str) and any(part in _tags(m) for m in union):
            model = next(m for m in union if part in _tags(m))
            union = []
            continue
        union = []
        out.append(part)
        if isinstance(part, int):
            if annotation is None or typing.get_origin(annotation) is not list:
                model, annotation = None, None
                continue
            annotation = typing.get_args(annotation)[0]
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            if model is None or part not in model.model_fields:
                model, annotation = None, None
                continue
            annotation = _optional_list(model.model_fields[part].annotation)
            node = node.get(part) if isinstance(node, dict) else None
            if typing.get_origin(annotation) is list:
                model = None
                continue
        models = _union_models(annotation)
        union = models if len(models) > 1 else []
        model = _pick(models, node)
    return tuple(out), model, annotation


def _optional_list(annotation: Any) -> Any:
    """`list[X]` for an optional list field (`list[X] | None`, e.g. a group's `seats`), else
    the annotation itself."""
    args = typing.get_args(annotation)
    lists = [a for a in args if typing.get_origin(a) is list]
    if len(lists) == 1 and type(None) in args and len(args) == 2:
        return lists[0]
    return annotation


def is_agent_slot(annotation: Any) -> bool:
    """True when the annotation is the agent union (policy | llm | axelrod | human)."""
    return len(_union_models(annotation)) == len(AGENT_TYPES)


def _tags(model: type[BaseModel]) -> tuple[Any, ...]:
    tag = model.model_fields.get("type")
    return typing.get_args(tag.annotation) if tag is not None else ()


def short_repr(value: Any) -> str:
    """repr of a value, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def validation_issues(
    exc: ValidationError, resolved: Resolved, root: type[BaseModel]
) -> list[ConfigIssue]:
    """One ConfigIssue per pydantic error, located in the file the value came from."""
    issues: list[ConfigIssue] = []
    for err in exc.errors():
        loc, _, annotation = walk(root, err["loc"], resolved.data)
        kind = err["type"]
        message = err["msg"].removeprefix("Value error, ")
        cause = (err.get("ctx") or {}).get("error")
        got = err.get("input")
        if isinstance(cause, PayoffError):
            loc = loc + tuple(p for p in cause.path.split(".") if p)
            issues.append(resolved.issue(loc, cause.message))
        elif kind == "extra_forbidden":
            _, model, _ = walk(root, loc[:-1], resolved.data)
            removed = model.removed_keys if model and issubclass(model, Strict) else {}
            if loc[-1] in removed:
                issues.append(resolved.issue(loc, f"{removed[loc[-1]]} (got {short_repr(got)})"))
            else:
                valid = f" (valid: {', '.join(model.model_fields)})" if model else ""
                issues.append(resolved.issue(loc, f"unknown key{valid}"))
        elif kind == "missing":
            issues.append(resolved.issue(loc, "required key is missing"))
        elif kind == "union_tag_invalid":
            tag = got.get("type") if isinstance(got, dict) else got
            issues.append(
                resolved.issue(
                    loc + ("type",),
                    f"unknown agent type (valid: {', '.join(AGENT_TYPES)}) (got {short_repr(tag)})",
                )
            )
        elif kind in ("union_tag_not_found", "model_attributes_type") and is_agent_slot(annotation):
            issues.append(
                resolved.issue(
                    loc,
                    "an agent is a policy name, `axelrod:Strategy`, or a mapping with a type "
                    f"({', '.join(AGENT_TYPES)}) (got {short_repr(got)})",
                )
            )
        else:
            issues.append(_located_message(resolved, root, loc, message, got))
    return issues


# Values never echoed in an error line: a key pasted by mistake, a URL with credentials.
SECRET_FIELDS = ("api_key_env", "base_url")


def _located_message(
    resolved: Resolved, root: type[BaseModel], loc: Loc, message: str, got: Any
) -> ConfigIssue:
    """A model-level message that starts with `key:` is placed at that key."""
    head, sep, rest = message.partition(": ")
    _, model, _ = walk(root, loc, resolved.data)
    if sep and model is not None and head in model.model_fields:
        loc, message = loc + (head,), rest
        got = got.get(head) if isinstance(got, dict) else got
    quiet = "(got" in message or isinstance(got, dict) or (loc and loc[-1] in SECRET_FIELDS)
    return resolved.issue(loc, message if quiet else f"{message} (got {short_repr(got)})")
