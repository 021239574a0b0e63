"""Reading YAML configs and resolving `{ref, overrides}` references, remembering where each value
came from so every error names its file and dotted path.

A reference resolves relative to the directory of the file that contains it and may not leave the
config root: the nearest directory at or above the top-level config that holds a `.pdbench-root`
marker file (so `configs/studies/x.yaml` may ref `../agents/...` when `configs/.pdbench-root`
exists), else the directory of the top-level config. Overrides merge deeply; overriding a key the
referenced file does not have is an error.

The marker counts only from the config's own project: the search climbs no higher than the first
directory holding `.git`, stops below a directory that is world-writable (`/tmp`) or owned by
another user, and a marker counts only when it is a regular file owned by the user running
pdbench (or root). Config and prompt files are read only when they are regular files, and never
more than MAX_FILE_BYTES of them (a device or FIFO is refused without being opened for reading).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pdbench.errors import ConfigError, ConfigIssue

Loc = tuple[str | int, ...]
REF_KEYS = {"ref", "overrides"}
ROOT_MARKER = ".pdbench-root"
MAPPING_FILE = "<mapping>"  # the file a config given as a mapping stands in for (none is read)
# Bounds on a config file and on the tree it expands to (refs and YAML aliases included), so a
# malformed or hostile file fails at once instead of exhausting memory or the stack.
MAX_FILE_BYTES = 1_000_000
MAX_NODES = 100_000
MAX_DEPTH = 40


# libyaml's parser when PyYAML has it (several times faster than the pure-Python one; the
# constructor, and so the duplicate-key check, stays in Python either way).
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """YAML's safe loader, refusing a mapping that repeats a key (YAML would keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: let the base class report it
                continue
            if first != key_node.start_mark.line + 1:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first at line {first})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def dotted(loc: Loc) -> str:
    """('experiment', 'conditions', 0, 'agent_a') -> 'experiment.conditions[0].agent_a'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class Origin:
    """Where a value came from: a file and the location inside it."""

    file: Path
    loc: Loc


@dataclass
class Resolved:
    """A config tree with refs expanded, plus the origin of every node."""

    data: Any
    root: Path
    origins: dict[Loc, Origin] = field(default_factory=dict)
    # Where each `{ref, overrides}` was written (a problem with the whole node belongs there).
    ref_sites: dict[Loc, Origin] = field(default_factory=dict)
    # Notes added to every issue under a location (an expanded sweep condition names its entry).
    notes: dict[Loc, str] = field(default_factory=dict)
    # The name messages give a source that is not a file (a mapping, see `resolve_mapping`).
    names: dict[Path, str] = field(default_factory=dict)

    def origin_of(self, loc: Loc) -> tuple[Path, Loc]:
        """The file and in-file location of `loc` (longest known prefix, then the rest of loc)."""
        for cut in range(len(loc), -1, -1):
            origin = self.origins.get(tuple(loc[:cut]))
            if origin is not None:
                return origin.file, origin.loc + tuple(loc[cut:])
        raise KeyError(loc)

    def display(self, path: Path) -> str:
        """A file name for messages: relative to the working directory when possible (a mapping:
        the name it was given)."""
        if path in self.names:
            return self.names[path]
        try:
            return str(path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(path)

    def note(self, loc: Loc) -> str:
        """The note of the longest prefix of `loc` that has one, as a message suffix."""
        for cut in range(len(loc), -1, -1):
            text = self.notes.get(tuple(loc[:cut]))
            if text:
                return f" [{text}]"
        return ""

    def issue(self, loc: Loc, message: str) -> ConfigIssue:
        """A ConfigIssue for the node at `loc` of the resolved tree."""
        file, inner = self.origin_of(loc)
        return ConfigIssue(self.display(file), dotted(inner), message + self.note(loc))

    def node_issue(self, loc: Loc, message: str) -> ConfigIssue:
        """A ConfigIssue about the node at `loc` as a whole: placed where it was written, also
        when it is a ref (then at the ref, not in the referenced file)."""
        site = self.ref_sites.get(loc)
        if site is None:
            return self.issue(loc, message)
        return ConfigIssue(self.display(site.file), dotted(site.loc), message + self.note(loc))


class _TooDeep(Exception):
    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH from the event stream (no recursion, no objects)."""
    depth = 0
    for event in yaml.parse(text, Loader=_UniqueKeyLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise _TooDeep(f"line {mark.line + 1}, column {mark.column + 1}")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileProblem(Exception):
    """A file that may not be read as a config or prompt (one-line message, no file bytes)."""


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES, what: str = "a config") -> bytes:
    """The bytes of a regular file of at most `limit` bytes. A FIFO, device, socket or
    directory is refused without waiting for a writer or reading it (opened non-blocking, checked
    with fstat), and a file that grows past `limit` is refused after reading `limit + 1` bytes,
    whatever its size claims. FileNotFoundError passes through; other problems: FileProblem."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileProblem(f"cannot read file ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        for test, kind in _KINDS:
            if test(info.st_mode):
                raise FileProblem(f"not a regular file ({kind})")
        if info.st_size > limit:
            raise FileProblem(
                f"file too large ({info.st_size:,} bytes; {what} is at most {limit:,})"
            )
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise FileProblem(f"file too large (over {limit:,} bytes; {what} is at most {limit:,})")
        return b"".join(chunks)
    except OSError as exc:
        raise FileProblem(f"cannot read file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_yaml(path: Path, display: str) -> Any:
    """Parse one YAML file; a syntax error becomes a one-line ConfigIssue with line and column."""
    try:
        raw = read_bounded(path)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError([ConfigIssue(display, "", "file not found")]) from None
    except FileProblem as exc:
        raise ConfigError([ConfigIssue(display, "", str(exc))]) from None
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ConfigError([ConfigIssue(display, "", message)]) from None
    try:
        _check_depth(text)
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except _TooDeep as exc:
        message = f"nested too deeply (at most {MAX_DEPTH} levels)"
        raise ConfigError([ConfigIssue(display, exc.where, message)]) from None
    except RecursionError:
        message = f"nested too deeply (at most {MAX_DEPTH} levels)"
        raise ConfigError([ConfigIssue(display, "", message)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        raise ConfigError([ConfigIssue(display, where, f"YAML syntax error: {problem}")]) from None


def locate(base: Path, value: str, root: Path, want: str = "file") -> Path | str:
    """Resolve `value` against `base`: the path, or a problem message for a config issue.

    The path must stay under `root` and be an existing file (`want="file"`) or
    directory (`want="dir"`). A name the OS cannot take (too long, a NUL byte)
    is a problem like any other, never an exception.
    """
    try:
        target = (base / value).resolve()
        if not target.is_relative_to(root):
            return f"path leaves the config root {root}"
        found = target.is_dir() if want == "dir" else target.is_file()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return f"not a usable path ({reason})"
    return target if found else "not found"


def read_text_file(path: Path) -> tuple[str, bytes] | str:
    """A prompt-like text file as (text with universal newlines, raw bytes), or a problem message."""
    try:
        raw = read_bounded(path, what="a prompt file")
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    except FileProblem as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read file ({exc.strerror or exc})"
    return text.replace("\r\n", "\n").replace("\r", "\n"), raw


def short_repr(value: str, limit: int = 120) -> str:
    """`repr(value)`, cut to `limit` characters so one bad value keeps the message one line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-4:]} ({len(value)} chars)"


def _is_ref(node: Any) -> bool:
    return isinstance(node, dict) and "ref" in node and set(node) <= REF_KEYS


class _Resolver:
    def __init__(self, root: Path, result: Resolved) -> None:
        self.root = root.resolve()
        self.result = result
        self.issues: list[ConfigIssue] = []
        self.nodes = 0

    def note(self, out_loc: Loc, file: Path, in_loc: Loc) -> None:
        self.result.origins[out_loc] = Origin(file, in_loc)

    def walk(
        self, node: Any, file: Path, in_loc: Loc, out_loc: Loc, stack: tuple[Path, ...]
    ) -> Any:
        self.note(out_loc, file, in_loc)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            message = (
                f"too many values (over {MAX_NODES:,} once refs and YAML aliases are expanded)"
            )
            raise ConfigError([ConfigIssue(self.result.display(file), dotted(in_loc), message)])
        if len(out_loc) > MAX_DEPTH and isinstance(node, dict | list):
            message = f"nested too deeply (at most {MAX_DEPTH} levels)"
            self.issues.append(ConfigIssue(self.result.display(file), dotted(in_loc), message))
            return None
        if isinstance(node, dict) and "ref" in node and not _is_ref(node):
            extra = sorted(map(str, set(node) - REF_KEYS))
            self.issues.append(
                ConfigIssue(
                    self.result.display(file),
                    dotted(in_loc + (extra[0],)),
                    "unknown key next to ref (valid: ref, overrides)",
                )
            )
            return None
        if _is_ref(node):
            return self.expand(node, file, in_loc, out_loc, stack)
        if isinstance(node, dict):
            return {
                k: self.walk(v, file, in_loc + (k,), out_loc + (k,), stack) for k, v in node.items()
            }
        if isinstance(node, list):
            return [
                self.walk(v, file, in_loc + (i,), out_loc + (i,), stack) for i, v in enumerate(node)
            ]
        return node

    def expand(
        self, node: dict, file: Path, in_loc: Loc, out_loc: Loc, stack: tuple[Path, ...]
    ) -> Any:
        disp = self.result.display(file)
        ref = node["ref"]
        if not isinstance(ref, str) or not ref:
            self.issues.append(
                ConfigIssue(disp, dotted(in_loc + ("ref",)), f"must be a file path (got {ref!r})")
            )
            return None
        target = locate(file.parent, ref, self.root)
        if isinstance(target, str):
            problem = "ref file not found" if target == "not found" else target
            self.issues.append(
                ConfigIssue(disp, dotted(in_loc + ("ref",)), f"{problem} (got {short_repr(ref)})")
            )
            return None
        if target in stack:
            self.issues.append(
                ConfigIssue(disp, dotted(in_loc + ("ref",)), f"circular ref (got {ref!r})")
            )
            return None
        try:
            loaded = read_yaml(target, self.result.display(target))
        except ConfigError as exc:
            self.issues.extend(exc.issues)
            return None
        if not isinstance(loaded, dict):
            self.issues.append(
                ConfigIssue(
                    self.result.display(target),
                    "",
                    f"must be a mapping (got {type(loaded).__name__})",
                )
            )
            return None
        self.result.ref_sites.setdefault(out_loc, Origin(file, in_loc))  # the outermost ref
        base = self.walk(loaded, target, (), out_loc, stack + (target,))
        overrides = node.get("overrides") or {}
        if not isinstance(overrides, dict):
            self.issues.append(
                ConfigIssue(
                    disp, dotted(in_loc + ("overrides",)), f"must be a mapping (got {overrides!r})"
                )
            )
            return base
        self.merge(base, overrides, file, in_loc + ("overrides",), out_loc, target, stack)
        return base

    def merge(
        self,
        base: dict,
        overrides: dict,
        file: Path,
        in_loc: Loc,
        out_loc: Loc,
        target: Path,
        stack: tuple[Path, ...],
    ) -> None:
        for key, value in overrides.items():
            if key not in base:
                valid = ", ".join(sorted(map(str, base)))
                self.issues.append(
                    ConfigIssue(
                        self.result.display(file),
                        dotted(in_loc + (key,)),
                        f"override of a key that {self.result.display(target)} does not have (valid: {valid})",
                    )
                )
                continue
            if isinstance(base[key], dict) and isinstance(value, dict) and not _is_ref(value):
                self.note(out_loc + (key,), *self._origin_pair(out_loc + (key,)))
                self.merge(base[key], value, file, in_loc + (key,), out_loc + (key,), target, stack)
            else:
                base[key] = self.walk(value, file, in_loc + (key,), out_loc + (key,), stack)

    def _origin_pair(self, loc: Loc) -> tuple[Path, Loc]:
        origin = self.result.origins[loc]
        return origin.file, origin.loc


def _trusted_owner(uid: int) -> bool:
    return uid in (0, os.geteuid()) if hasattr(os, "geteuid") else True


def _marker_counts(directory: Path) -> bool:
    """A `.pdbench-root` marker in `directory` that is a regular file owned by this user or
    root (a symlink or a file someone else planted does not count)."""
    try:
        info = (directory / ROOT_MARKER).lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and _trusted_owner(info.st_uid)


def _inside_project(directory: Path) -> bool:
    """Whether the marker search may look in `directory`: not world-writable (a shared /tmp)
    and owned by this user or root."""
    try:
        info = directory.stat()
    except OSError:
        return False
    return not info.st_mode & stat.S_IWOTH and _trusted_owner(info.st_uid)


def config_root(config_dir: Path) -> Path:
    """The config root for a config in `config_dir`: the nearest directory at or above it that
    holds a `.pdbench-root` marker file that counts, else `config_dir` itself. The search stays
    inside the config's project: it stops at the first directory holding `.git`, and before a
    directory that is world-writable or owned by another user."""
    for directory in (config_dir, *config_dir.parents):
        if not _inside_project(directory):
            break
        if _marker_counts(directory):
            return directory
        if (directory / ".git").exists():
            break
    return config_dir


def load_resolved(path: Path) -> Resolved:
    """Read a top-level config and expand every ref; ConfigError lists every problem found."""
    path = Path(path)
    result = Resolved(data=None, root=config_root(path.resolve().parent))
    return _expand_top(read_yaml(path, result.display(path)), path, result)


def mapping_source(base_dir: Path) -> Path:
    """The path that stands for a config given as a mapping with refs resolving from
    `base_dir` (no file is there; messages show the mapping's name instead)."""
    return Path(base_dir).resolve() / MAPPING_FILE


def resolve_mapping(data: Any, name: str, base_dir: Path) -> Resolved:
    """Expand every ref of a config given as a mapping (the app's forms), as `load_resolved` does
    for a file in `base_dir`: refs resolve from `base_dir` and may not leave its config root,
    the same bounds hold, and every message names `name` where it would name the file.
    ConfigError lists every problem found; `data` itself is not changed."""
    source = mapping_source(base_dir)
    result = Resolved(data=None, root=config_root(source.parent), names={source: name})
    return _expand_top(data, source, result)


def _expand_top(data: Any, path: Path, result: Resolved) -> Resolved:
    """Expand the refs of a top-level config read from (or standing for) `path` into `result`."""
    if not isinstance(data, dict):
        raise ConfigError(
            [
                ConfigIssue(
                    result.display(path), "", f"must be a mapping (got {type(data).__name__})"
                )
            ]
        )
    resolver = _Resolver(result.root, result)
    source = path if path in result.names else path.resolve()
    result.data = resolver.walk(data, source, (), (), (source,))
    if resolver.issues:
        raise ConfigError(resolver.issues)
    return result


def apply_overrides(resolved: Resolved, overrides: dict[str, Any]) -> None:
    """Set dotted paths (`run.seed`, `experiment.replicates`) in the resolved tree, as command-line
    options do; a path into a missing section creates it. Errors then name the config file."""
    for dotted_path, value in overrides.items():
        node = resolved.data
        parts = dotted_path.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
