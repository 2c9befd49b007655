"""The source formats, one module each, and the one way a file is read: through the file layer
(a regular file, not a link, at most MAX_BYTES, UTF-8), its source told by --source or by its
content, then its reader. A new source is a module with sniff() and read() and a line here."""
from __future__ import annotations

from pathlib import Path

from dnnbench.refs import lambda_csv, milabench_yaml, mlperf_summary
from dnnbench.refs import reference as ref

SOURCES = {"lambda": lambda_csv, "mlperf": mlperf_summary, "milabench": milabench_yaml}
MAX_BYTES = 16 << 20     # the public files are a few KiB to a few hundred; a bigger one is not theirs


# a file whose content no source claims, by its kind: only MLPerf publishes JSON, only milabench
# YAML (so a broken one is refused by its reader, saying what is wrong with it)
BY_SUFFIX = {".json": "mlperf", ".yaml": "milabench", ".yml": "milabench"}


def detect(text: str, filename: str) -> str:
    found = [name for name, module in SOURCES.items() if module.sniff(text, filename)]
    if not found and Path(filename).suffix.lower() in BY_SUFFIX:
        return BY_SUFFIX[Path(filename).suffix.lower()]
    if len(found) != 1:
        raise ref.Refused("not a file of a known source (Lambda's CSV, MLPerf's summary, milabench's "
                          "scaling YAML): give --source" if not found else
                          f"could be {' or '.join(found)}: give --source")
    return found[0]


def read(path: Path, source: str | None = None, precision: str | None = None,
         gpu: str | None = None) -> tuple[str, ref.Parsed]:
    """(source, what the file holds); Refused when it is not read at all."""
    from dnnbench.errors import DnnbenchError
    from dnnbench.yaml_files import read_text
    try:
        text = read_text(path, "reference file", MAX_BYTES)
    except DnnbenchError as exc:
        raise ref.Refused(str(exc)) from None
    chosen = source or detect(text, str(path))
    return chosen, SOURCES[chosen].read(text, str(path), precision=precision, gpu=gpu)
