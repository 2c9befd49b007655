"""YAML files users hand to dnnbench (suites, baselines), read defensively: regular files of
bounded size only, anchors and aliases allowed but their expansion capped (a "billion laughs"
file is a few hundred bytes that expand to gigabytes), no recursive aliases, and every mapping
remembering the lines of its keys for `file:line` messages."""
from __future__ import annotations

from pathlib import Path

from dnnbench.errors import DnnbenchError

MAX_BYTES = 1 << 20     # a suite or baseline is a few KiB
MAX_NODES = 100_000     # nodes after expanding aliases: far above any real suite


class Mapping(dict):
    """A YAML mapping, with the line it starts on and the line of each key (1-based)."""
    line = 1
    key_lines: dict = {}


def read_text(path: Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    """A user file's text: a regular file (never a FIFO or device, which would hang or never
    end), at most `max_bytes`, UTF-8; one DnnbenchError otherwise."""
    from dnnbench.workloads.schema import FileTooLarge, NotRegularFile, read_regular
    try:
        data = read_regular(path, max_bytes)
    except OSError as exc:
        raise DnnbenchError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except NotRegularFile:
        raise DnnbenchError(f"{what} {path} is not a regular file") from None
    except FileTooLarge as exc:
        raise DnnbenchError(f"{what} {path} is {exc.size} bytes; at most {max_bytes} are read") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DnnbenchError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None


def _expanded_size(root, limit: int) -> int:
    """Nodes in the composed graph with every alias expanded; stops past `limit`. Raises
    ValueError on a cycle (an alias inside its own anchor)."""
    import yaml
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ValueError("an alias refers to a node that contains it")
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > limit:
                break
        active.discard(key)
        sizes[key] = total
        return total
    return size(root)


def load(path: Path, what: str):
    """The YAML document in `path`, mappings as Mapping; one DnnbenchError for any problem."""
    return parse(read_text(path, what), path)


def parse(text: str, path) -> object:
    """A YAML document already read (read_text), with load's limits; `path` names it in messages."""
    import yaml

    # libyaml's parser where PyYAML has it (7x faster: milabench's scaling files are 30-70 kB
    # of flow mappings); the same safe constructors, marks and limits either way
    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def get_single_node(self):
            node = super().get_single_node()
            if node is not None:
                try:
                    n = _expanded_size(node, MAX_NODES)
                except (ValueError, RecursionError) as exc:
                    why = "nesting too deep" if isinstance(exc, RecursionError) else str(exc)
                    raise DnnbenchError(f"{path}: refused: {why}") from None
                if n > MAX_NODES:
                    raise DnnbenchError(f"{path}: refused: its aliases expand to more than {MAX_NODES} "
                                        "values (a YAML alias bomb?)")
            return node

    def mapping(loader, node):
        m = Mapping(loader.construct_mapping(node, deep=True))
        m.line = node.start_mark.line + 1
        m.key_lines = {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
        return m
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise DnnbenchError(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise DnnbenchError(f"{path}: refused: nesting too deep") from None
    except TypeError as exc:   # an unhashable key: `{[1]: x}` or `? [a]`
        raise DnnbenchError(f"{path}: not a usable YAML document: {exc}") from None
