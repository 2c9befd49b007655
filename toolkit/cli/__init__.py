"""The `dnnbench` command line: one module per stage (images, runs, data, results), each
registering its commands here. Thin wiring: a command's work lives in its stage's package,
imported inside the command so that `dnnbench --help` stays fast."""
from __future__ import annotations

import errno
import sys

import typer

from dnnbench import __version__
from dnnbench.errors import DnnbenchError

from . import data, history, images, k8s, mlperf, refs, results, runs

try:   # help text wraps between words only: `--start-iter` or `time-workload-random` never split
    from typer._click._textwrap import TextWrapper as _HelpWrapper
    _wrapper_init = _HelpWrapper.__init__

    def _whole_words(self, *args, **kwargs):   # textwrap's __init__ sets both per instance: a class attribute is not enough
        _wrapper_init(self, *args, **{**kwargs, "break_on_hyphens": False, "break_long_words": False})
    _HelpWrapper.__init__ = _whole_words      # type: ignore[method-assign]
except ImportError:   # another typer layout: its default wrapping still reads
    pass

app = typer.Typer(
    name="dnnbench", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode=None,   # Click's plain help: it reflows to the terminal (80 columns) without boxes
    help="Build and run containerized PyTorch DNN training benchmarks.\n\n"
         "Typical flow: `dnnbench build --base ngc-24.10`, then "
         "`dnnbench run resnet50 --synthetic --gpus 0`, then `dnnbench report results/`.")


def _version(value: bool):
    if value:
        typer.echo(f"dnnbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")):
    pass


for _group in (images, runs, data, results, history, mlperf, refs, k8s):
    _group.register(app)


def _terminate_as_interrupt() -> None:
    """SIGTERM and SIGHUP end any command the way Ctrl-C does: its cleanup runs (a run's own
    handlers take over while it runs), one `interrupted` line, exit 130, never a bare 143."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, interrupt)
        except (ValueError, OSError):   # not the main thread (an embedding caller): leave it
            pass


# what a write to stdout or stderr can fail with when the output's disk cannot take it (`report >
# /dev/full`): one line on stderr, exit 1, not a traceback
_OUTPUT_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _output_failed(exc: OSError) -> None:
    import os
    where = exc.filename or "the output"
    try:
        sys.stderr.write(f"error: cannot write {where}: {exc.strerror or exc}\n")
        sys.stderr.flush()
    except OSError:
        pass
    try:   # what stays buffered must not fail again as the interpreter exits
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(1)


def _clause(sentence: str, most: int = 100) -> str:
    """A long sentence up to its first ':' or ';' outside parentheses (its head clause)."""
    depth = 0
    for k, ch in enumerate(sentence if len(sentence) > most else ""):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch in ":;" and k > 10:
            return sentence[:k] + "."
    return sentence


def _whole_short_help(command) -> None:
    """Each command's line in its group's list: its help's first sentence whole, wrapped between
    words, where Click would cut it at the terminal's width with '...'."""
    for sub in (getattr(command, "commands", None) or {}).values():
        if not sub.short_help and sub.help:
            paragraph = sub.help.strip().split("\n\n")[0].split()
            end = next((k for k, word in enumerate(paragraph) if word.endswith(".")), len(paragraph) - 1)
            sub.short_help = _clause(" ".join(paragraph[:end + 1]))
        _whole_short_help(sub)


def print_error(exc: DnnbenchError) -> None:
    """One `error:` line; under it, each of its detail lines (a build's cause, a hint) and its log."""
    from rich.text import Text

    from dnnbench.console import err, visible
    err.print(Text.assemble(("error: ", "bold red"), visible(exc, one_line=True)), soft_wrap=True)
    for line in getattr(exc, "details", None) or []:
        err.print(f"  {visible(line, one_line=True)}", markup=False, soft_wrap=True)
    if exc.log:
        err.print(f"details: {visible(exc.log)}", markup=False, soft_wrap=True)


def main() -> None:
    from rich.text import Text

    from dnnbench.console import err, visible
    command = typer.main.get_command(app)
    _whole_short_help(command)
    _terminate_as_interrupt()
    try:
        code = command.main(prog_name="dnnbench", standalone_mode=False)
        sys.stdout.flush()    # a full disk under stdout fails here, not in the interpreter's exit
    except OSError as exc:
        if exc.errno not in _OUTPUT_FULL:
            raise
        _output_failed(exc)
    except DnnbenchError as exc:
        print_error(exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:
        # click's usage errors (typer vendors click, so match its API rather than its class):
        # one `error:` line naming the command's --help, like every other bad input
        if type(exc).__name__ == "NoArgsIsHelpError":   # a group called bare (click 8.2+): its help, as help
            err.print(visible(getattr(exc, "format_message")()), markup=False, highlight=False, soft_wrap=True)
            sys.exit(getattr(exc, "exit_code", 2))
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            message = exc.format_message().replace("Value error, ", "")
            if message:  # no message: a group called bare, whose help is already printed
                ctx = getattr(exc, "ctx", None)
                where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
                err.print(Text.assemble(("error: ", "bold red"), visible(message + where, one_line=True)), soft_wrap=True)
            sys.exit(exc.exit_code)
        if type(exc).__name__ == "Abort":   # Ctrl-C or end of input at a prompt
            err.print("interrupted", markup=False)
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else 0)
