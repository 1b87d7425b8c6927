"""``trainlint estimate``: the per-GPU memory estimate of each resolved setup.

Imports nothing heavy at import time (the CLI registers this command lazily); the estimate
itself is stdlib only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

CATEGORIES = ("weights", "gradients", "optimizer", "activations", "buffers")


def _accelerate_next_to(ws: Any, script: str) -> Any:
    """An accelerate config in the script's folder, when the setup links none (until launch
    lines link their configs): the only one there, parsed with the accelerate reader."""
    from trainlint.sources.accelerate import AccelerateConfig

    folder = Path(script).parent
    found = [f for f in ws.files.values() if f.kind == "accelerate" and Path(f.path).parent == folder]
    if len(found) != 1:
        return None
    f = found[0]
    if f.doc is not None and hasattr(f.doc, "world_size"):
        return f.doc
    try:
        return AccelerateConfig.parse(f.text.text, f.path)
    except Exception:  # noqa: BLE001 - unreadable: not used
        return None


def _to_json(r: Any) -> dict[str, Any]:
    from dataclasses import asdict

    from trainlint.memory import CUDA_CONTEXT_BYTES

    judged_shape, est = r.judged()
    shape = {k: v for k, v in asdict(judged_shape).items()}
    total = est.total + CUDA_CONTEXT_BYTES
    gpu = None
    if r.gpu is not None:
        gpu = {"name": r.gpu.name, "memory_bytes": r.gpu.memory_bytes,
               "fits": total <= r.gpu.memory_bytes,
               "headroom_bytes": r.gpu.memory_bytes - total}
    return {
        "script": r.script,
        "launch": r.launch or None,
        "model": {"name": r.model.hub_id, "params": r.model.params, "model_type": r.model.model_type,
                  "source": r.model.from_config or r.model.source},
        "per_gpu": {c: est.per_gpu[c] for c in (*CATEGORIES, "total")},
        "cuda_context": CUDA_CONTEXT_BYTES,
        "host": est.host_bytes,
        "nvme": est.nvme_bytes,
        "gpu": gpu,
        "shape": shape,
        "terms": [{"category": t.category, "name": t.name, "bytes": t.bytes, "formula": t.formula,
                   "source": t.source} for t in est.terms],
        "assumed": sorted(r.assumed),
        "provenance": r.notes + r.judged_notes(),
        "notes": est.notes,
    }


def _render_text(r: Any, console: Any) -> None:
    from rich.table import Table

    from trainlint.memory import CUDA_CONTEXT_BYTES, GIB, savings

    s, est = r.judged()
    title = (f"{r.model.hub_id} ({r.model.params / 1e6:,.0f}M params), {s.precision}, "
             f"{'ZeRO-' + str(s.zero_stage) if s.zero_stage else 'no ZeRO'}"
             f"{', optimizer offload ' + s.offload_optimizer if s.offload_optimizer != 'none' else ''}"
             f", {s.world_size} GPU{'s' if s.world_size != 1 else ''}, micro batch {s.micro_batch} x seq {s.seq_len}")
    table = Table(title=title, header_style="bold", show_lines=False)
    table.add_column("term")
    table.add_column("per GPU", justify="right", no_wrap=True)
    table.add_column("formula")
    for cat in CATEGORIES:
        terms = [t for t in est.terms if t.category == cat]
        if not terms:
            table.add_row(f"[bold]{cat}[/bold]", "0.00 GiB", "")
            continue
        table.add_row(f"[bold]{cat}[/bold]", f"[bold]{est.per_gpu[cat] / GIB:.2f} GiB[/bold]", "")
        for t in terms:
            table.add_row(f"  {t.name}", f"{t.bytes / GIB:.2f} GiB", t.formula)
    table.add_row("CUDA context", f"{CUDA_CONTEXT_BYTES / GIB:.2f} GiB", "typical, outside PyTorch's allocator")
    total = est.total + CUDA_CONTEXT_BYTES
    table.add_row("[bold]total[/bold]", f"[bold]{total / GIB:.2f} GiB[/bold]", "")
    if r.gpu is not None:
        fits = total <= r.gpu.memory_bytes
        verdict = "[green]fits[/green]" if fits else "[red]does not fit[/red]"
        table.add_row(f"GPU {r.gpu.name}", f"{r.gpu.memory_bytes / GIB:.2f} GiB",
                      f"{verdict}: {(r.gpu.memory_bytes - total) / GIB:+.2f} GiB headroom")
    host = next((t for t in est.terms if t.category == "host"), None)
    if host is not None:
        table.add_row("host memory per node", f"{est.host_bytes / GIB:.2f} GiB", host.formula)
    if est.nvme_bytes:
        table.add_row("NVMe", f"{est.nvme_bytes / GIB:.2f} GiB", "offloaded states")
    console.print(table)
    console.print("[bold]from[/bold]:")
    for n in r.notes + r.judged_notes():
        console.print(f"  - {n}", highlight=False)
    for n in est.notes:
        console.print(f"  [yellow]note[/yellow]: {n}", highlight=False)
    if r.gpu is not None and total > r.gpu.memory_bytes:
        console.print("[bold]changes that would lower it[/bold]:")
        for sug in savings(s, r.gpu.memory_bytes - CUDA_CONTEXT_BYTES, bf16_ok=r.gpu.bf16)[:6]:
            console.print(f"  - {sug.change}: -{sug.saving / GIB:.2f} GiB -> {(sug.new_total + CUDA_CONTEXT_BYTES) / GIB:.2f}"
                          f" GiB{' (fits)' if sug.fits else ''}", highlight=False)
    console.print()


@click.command("estimate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--gpus", type=click.IntRange(min=1), help="World size (GPUs) when no launch line says.")
@click.option("--gpu", help='Target GPU, e.g. "A100-80GB", "H100", "RTX 4090", or "auto" (nvidia-smi).')
@click.option("--transformers-version", help="Target transformers version (decides, e.g., the dtype from_pretrained "
              "loads weights in: float32 in 4.x, the checkpoint's in 5.x).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A pyproject.toml to read [tool.trainlint] from (default: the nearest one).")
def estimate(paths: tuple[Path, ...], gpus: int | None, gpu: str | None, transformers_version: str | None, fmt: str,
             config_path: Path | None) -> None:
    """Estimate the per-GPU memory of each training setup (weights, gradients, optimizer,
    activations, buffers), each term with its formula."""
    import json

    from trainlint.config import ConfigError, load_settings
    from trainlint.estimate import SetupEstimate, estimate_setup
    from trainlint.resolve import build_setups, read_workspace

    path_list = list(paths) or [Path(".")]
    try:
        settings = load_settings(config_path or path_list[0], {"gpu": gpu, "gpus": gpus,
                                                               "transformers-version": transformers_version})
        if settings.gpu and settings.gpu.lower() == "auto":
            from trainlint.knowledge.gpus import auto_gpu_problem

            problem = auto_gpu_problem()
            if problem is not None:
                click.echo(f"trainlint: note: --gpu auto: {problem}; the estimate is not compared with a GPU "
                           f"(pass --gpu NAME, see `trainlint gpus`)", err=True)
        if transformers_version:
            from trainlint.config import version_notes

            for note in version_notes(settings):
                click.echo(f"trainlint: note: {note}", err=True)
        ws = read_workspace(path_list, settings, {})
        setups = build_setups(ws, settings)
    except ConfigError as e:
        click.echo(f"trainlint: error: {e}", err=True)
        sys.exit(2)
    results: list[Any] = []
    messages: list[str] = []
    for setup in setups:
        script = setup.scripts[0].path if setup.scripts else str(setup.root)
        acc = None if setup.extra.get("accelerate") is not None else _accelerate_next_to(ws, script)
        r = estimate_setup(setup, gpus=settings.gpus, accelerate=acc)
        if r is None:
            continue
        if isinstance(r, SetupEstimate):
            results.append(r)
        else:
            messages.append(r)
    if not results and not messages:
        messages.append("no training script that loads a model (from_pretrained) was found")
    if fmt == "json":
        # one setup: its estimate at the top level; always the list of all and the messages
        items = [_to_json(r) for r in results]
        doc: dict[str, Any] = dict(items[0]) if len(items) == 1 else {}
        doc.update({"estimates": items, "messages": messages})
        click.echo(json.dumps(doc, indent=2))
        return
    from rich.console import Console

    console = Console(soft_wrap=False, highlight=False)
    for r in results:
        console.print(f"[bold]{r.script}[/bold]" + (f"  launched by {r.launch}" if r.launch else ""))
        _render_text(r, console)
    for m in messages:
        console.print(f"trainlint estimate: {m}")
