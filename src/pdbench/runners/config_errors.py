"""Locating pydantic errors in configs: which model is valid at a location, short values."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from pdbench.runners.config_loader import Loc


def _unwrap(annotation: Any, node: Any) -> type[BaseModel] | None:
    """The model an annotation stands for at `node` (Optional, list, unions by `type`)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0], node)
    if origin in (typing.Union, types.UnionType):
        models = [
            a
            for a in typing.get_args(annotation)
            if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if isinstance(node, dict) and "type" in node:
            for model in models:
                tag = model.model_fields.get("type")
                if tag is not None and node["type"] in typing.get_args(tag.annotation):
                    return model
        return models[0] if len(models) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def model_at(root: type[BaseModel], loc: Loc, data: Any) -> type[BaseModel] | None:
    """The model whose fields are valid at `loc` (None when `loc` is not a model)."""
    model: type[BaseModel] | None = root
    node, annotation = data, None
    for part in loc:
        if isinstance(part, int):
            if annotation is None or typing.get_origin(annotation) is not list:
                return None
            annotation = typing.get_args(annotation)[0]
            node = node[part] if isinstance(node, list) and part < len(node) else None
            model = _unwrap(annotation, node)
            continue
        if model is None or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
        node = node.get(part) if isinstance(node, dict) else None
        model = None if typing.get_origin(annotation) is list else _unwrap(annotation, node)
    return model


def short_repr(value: Any) -> str:
    """repr of a value, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
