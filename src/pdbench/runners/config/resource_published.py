"""`pgg.published` / `commons.published` (issue 31): read the file of published numbers beside a
resource recipe (`pdbench.core.resource_published`), validate it, and check its metrics and
conditions against the run, each problem one line `file: dotted.path: message`."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from pdbench.core.resource_published import ResourcePublished
from pdbench.errors import ConfigError, ConfigIssue
from pdbench.runners.config.resolve import Resolved, load_resolved, locate, short_repr
from pdbench.runners.config.validation import validation_issues


def read_resource_published(
    config: Any, resolved: Resolved, issues: list[ConfigIssue]
) -> dict[str, Any] | None:
    """The config's published numbers as the manifest keeps them (JSON-ready), or None when it
    names no file or the file has problems (added to `issues`)."""
    section = config.section
    if section.published is None:
        return None
    where = (config.section_name, "published")
    file, _ = resolved.origin_of(where)
    target = locate(file.parent, section.published, resolved.root)
    if isinstance(target, str):
        issues.append(resolved.issue(where, f"{target} (got {short_repr(section.published)})"))
        return None
    try:
        source = load_resolved(target)
        numbers = ResourcePublished.model_validate(source.data)
    except ConfigError as exc:
        issues.extend(exc.issues)
        return None
    except ValidationError as exc:
        issues.extend(validation_issues(exc, source, ResourcePublished))
        return None
    problems = numbers.problems(config.kind, [c.name for c in section.conditions])
    for loc, message in problems:
        issues.append(source.issue(loc, message))
    if problems:
        return None
    return numbers.manifest_entry(section.published)
