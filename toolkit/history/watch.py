"""`dnnbench watch`: a job on each image of an ordered list (or a range of catalog releases),
each result recorded in the history, then change detection over the list; exit 1 when a
release made the job slower. Resumable: finished steps are read back from the watch folder
(and recorded again, which adds nothing when they are already in the store)."""
from __future__ import annotations

import dataclasses

from dnnbench.errors import DnnbenchError


def watch_command(opts, images: list[str] | None, bases: str | None, tolerance: float) -> int:
    from rich.text import Text

    from dnnbench.console import info, out, visible
    from dnnbench.history import views
    from dnnbench.history.changes import changes
    from dnnbench.history.facts import row
    from dnnbench.history.record import record
    from dnnbench.history.store import Store
    from dnnbench.runs import bisect
    from dnnbench.workloads import schema
    listed = bisect.image_list(images, bases)
    template = bisect._template(opts, tolerance)
    folder = bisect._folder(opts, "watch")
    template = dataclasses.replace(template, run_id=folder.name)
    if not bisect._check_first(template, listed, folder):
        return 0
    Store(create=True).close()   # a watch without a usable store is refused before any run
    points = []
    for i, (image, base) in enumerate(listed):
        step = bisect.measure(bisect.Step(i, image, folder / bisect._slug(i, image)), base, template)
        path = step.run_dir / schema.RESULT_FILE
        assert step.result is not None   # measure() raises on a step it could not measure
        if step.reused:
            record(path, step.result)    # a store that missed it (it was down) catches up
        points.append(dict(row(path, step.result), image=image))
    found = changes(points)
    measured = sum(1 for p in points if p.get("throughput"))
    slower = False
    for c in found:
        slower = slower or c.high < 1
        lines = [f"{'slower' if c.high < 1 else 'faster' if c.low > 1 else 'changed'}: "
                 f"{c.pct:+.1f} % (95 % CI {(c.low - 1) * 100:+.1f} to {(c.high - 1) * 100:+.1f} %, p {c.p:.3f}) "
                 f"from {views.name(c.after.get('image'))}, after {views.name(c.before.get('image'))}"]
        lines += [f"  {fact}" for fact in c.facts]
        for line in lines:
            out.print(Text(visible(line, one_line=True)), soft_wrap=True)
    if not found:
        info(f"no lasting change over {measured} images (a change needs 3 images on each side)")
    if measured != len(listed):
        raise DnnbenchError(f"only {measured} of {len(listed)} images measured")
    return 1 if slower else 0
