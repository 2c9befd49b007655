"""The `dnnbench` command line: one module per stage (images, runs, data, results), each
registering its commands here. Thin wiring: a command's work lives in its stage's package,
imported inside the command so that `dnnbench --help` stays fast."""
from __future__ import annotations

import sys

import typer

from dnnbench import __version__
from dnnbench.errors import DnnbenchError

from . import data, images, mlperf, results, runs

try:   # help text wraps between words only: `--start-iter` or `time-workload-random` never split
    from typer._click._textwrap import TextWrapper as _HelpWrapper
    _HelpWrapper.break_on_hyphens = False
    _HelpWrapper.break_long_words = False
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


for _group in (images, runs, data, results, mlperf):
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


def main() -> None:
    from rich.text import Text

    from dnnbench.console import err, visible
    command = typer.main.get_command(app)
    _terminate_as_interrupt()
    try:
        code = command.main(prog_name="dnnbench", standalone_mode=False)
    except DnnbenchError as exc:
        err.print(Text.assemble(("error: ", "bold red"), visible(exc, one_line=True)), soft_wrap=True)
        if exc.log:
            err.print(f"details: {visible(exc.log)}", markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:
        # click's usage errors (typer vendors click, so match its API rather than its class):
        # one `error:` line naming the command's --help, like every other bad input
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
