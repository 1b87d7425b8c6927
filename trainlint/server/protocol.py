"""``trainlint server``: the Language Server Protocol over stdio (pygls).

Diagnostics are published on open, on change (debounced) and on save, from the editor's
buffers (a notebook open as an LSP 3.17 notebook document is checked from its cells, and its
findings are published on the cells they are in), for the document and every open document of
the same setup (editing
``ds_config.json`` re-publishes ``run.sh`` and ``train.py``). Each fix is a quick fix;
``source.fixAll.trainlint`` applies the document's safe fixes; unsafe fixes are offered with
their label and never in fix-all. Hover on a finding shows the rule's summary and why; the
command ``trainlint.showRule`` returns a rule's whole page. Settings come from the workspace's
``[tool.trainlint]`` and are reloaded when pyproject.toml changes. Lint runs happen one at a
time in a worker thread; a failure in one is logged and published as a TL000 finding, never a
dead server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from trainlint import __version__
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.server.convert import LineIndex, path_to_uri, rule_url, uri_to_path
from trainlint.server.session import Session, norm

FIX_ALL_KIND = "source.fixAll.trainlint"
SHOW_RULE = "trainlint.showRule"
DEBOUNCE_S = 0.05
# Jupyter notebooks as LSP 3.17 notebook documents: their Python cells are synchronised
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(notebook_selector=[types.NotebookDocumentFilterWithNotebook(
    notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])], save=True)
WATCHED_GLOB = "**/{pyproject.toml,*.py,*.sh,*.json,*.yaml,*.yml,*.md,*.ipynb}"
log = logging.getLogger("trainlint.server")

_SEVERITY = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
             Severity.INFO: types.DiagnosticSeverity.Information}


class TrainlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("trainlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.session = Session()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainlint-lint")
        self.pending: dict[str, asyncio.Task] = {}
        # per document URI (a file, or a notebook cell): the findings last published there and
        # the text they were computed on
        self.findings: dict[str, list[Diagnostic]] = {}
        self.texts: dict[str, str] = {}
        self.uris: dict[str, str] = {}  # path -> the URI the editor uses
        self.notebooks: dict[str, str] = {}  # path of an .ipynb open as a notebook -> notebook URI

    # -- running -------------------------------------------------------------------------

    def uri_of(self, path: str) -> str:
        return self.uris.get(path) or path_to_uri(path)

    def schedule(self, path: str, delay: float = DEBOUNCE_S) -> None:
        old = self.pending.pop(path, None)
        if old is not None:
            old.cancel()
        self.pending[path] = asyncio.get_running_loop().create_task(self._run(path, delay))

    async def _run(self, path: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = self.session.documents.get(path)
        version = doc.version if doc else None
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self.worker, self.session.lint, path)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken run must not end the server
            log.error("lint of %s failed: %s", path, traceback.format_exc())
            from trainlint.engine import internal_error

            self.publish(path, [internal_error(path, "the language server's run", exc)],
                         self.session.text_of(path) or "")
            return
        finally:
            if self.pending.get(path) is asyncio.current_task():
                self.pending.pop(path, None)
        for p, found in result.by_path.items():
            if p not in self.session.documents:
                continue
            if p == path and self.session.documents[p].version != version:
                continue  # the buffer changed meanwhile: a newer run is on its way
            self.publish(p, found, result.texts.get(p, ""))
        error = self.session.settings_error
        if error:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                           message=f"trainlint: {error}"))

    def publish(self, path: str, found: list[Diagnostic], text: str) -> None:
        if path in self.notebooks:
            self.publish_cells(path, found)
            return
        uri = self.uri_of(path)
        self.findings[uri] = found
        self.texts[uri] = text
        doc = self.session.documents.get(path)
        lines = LineIndex(text)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=doc.version if doc else None,
            diagnostics=[self.to_lsp(d, lines) for d in found]))

    def owner(self, uri: str) -> str | None:
        """The path of the file (or notebook) whose findings the document ``uri`` shows."""
        p = uri_to_path(uri)
        if p is not None:
            return norm(p)
        nb = self.workspace.get_notebook_document(cell_uri=uri)
        if nb is None:
            return None
        p = uri_to_path(nb.uri)
        return norm(p) if p is not None else None

    def cells(self, path: str) -> list[tuple[str, str]]:
        """(cell URI, cell text) of a notebook open as a notebook document, in order."""
        nb = self.workspace.get_notebook_document(notebook_uri=self.notebooks[path])
        if nb is None:
            return []
        return [(c.document, self.workspace.get_text_document(c.document).source) for c in nb.cells]

    def publish_cells(self, path: str, found: list[Diagnostic]) -> None:
        """A notebook's findings on its cells (``cell`` counts every cell, as the notebook
        lists them); a finding of the whole notebook goes to its first cell."""
        cells = self.cells(path)
        for i, (uri, text) in enumerate(cells, 1):
            mine = [d for d in found if d.cell == i or (d.cell is None and i == 1)]
            self.findings[uri] = mine
            self.texts[uri] = text
            lines = LineIndex(text)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=[self.to_lsp(d, lines, raw=False) for d in mine]))

    def where(self, path: str, cell: int | None) -> tuple[str, str]:
        """The URI and text a location of ``path`` (in ``cell``) is shown in."""
        p = norm(path)
        if cell is not None and p in self.notebooks:
            cells = self.cells(p)
            if 1 <= cell <= len(cells):
                return cells[cell - 1]
        uri = self.uri_of(p)
        return uri, self.texts.get(uri) or self.session.text_of(p) or ""

    def _raw(self, d: Diagnostic) -> Diagnostic:
        """A notebook finding placed in the ``.ipynb`` text the editor shows."""
        if d.cell is None and not d.related and d.fix is None:
            return d
        from trainlint.report.cells import as_raw

        paths = {d.path, *(r.path for r in d.related), *(e.path for e in (d.fix.edits if d.fix else []))}
        texts = {p: self.texts.get(self.uri_of(norm(p))) or self.session.text_of(norm(p)) or "" for p in paths
                 if p.endswith(".ipynb") and norm(p) not in self.notebooks}
        return as_raw(d, texts) if texts else d

    def to_lsp(self, d: Diagnostic, lines: LineIndex, raw: bool = True) -> types.Diagnostic:
        if raw:
            d = self._raw(d)
        start = lines.position(d.line, d.column)
        end = lines.position(d.end_line, d.end_column)
        if end < start:
            end = start
        related = []
        for r in d.related:
            ruri, rtext = self.where(r.path, r.cell)
            pos = LineIndex(rtext).position(r.line, r.column)
            related.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=ruri, range=types.Range(
                    start=types.Position(line=pos[0], character=pos[1]),
                    end=types.Position(line=pos[0], character=pos[1]))),
                message=r.message))
        return types.Diagnostic(
            range=types.Range(start=types.Position(line=start[0], character=start[1]),
                              end=types.Position(line=end[0], character=end[1])),
            severity=_SEVERITY.get(d.severity, types.DiagnosticSeverity.Warning),
            code=d.code, code_description=types.CodeDescription(href=rule_url(d.name)),
            source="trainlint", message=f"{d.message} ({d.name})", related_information=related or None,
            data={"code": d.code, "name": d.name})

    # -- edits ---------------------------------------------------------------------------

    def text_edits(self, d: Diagnostic) -> dict[str, list[types.TextEdit]]:
        assert d.fix is not None
        d = self._raw(d)
        out: dict[str, list[types.TextEdit]] = {}
        for e in (d.fix.edits if d.fix is not None else []):
            uri, text = self.where(e.path, e.cell)
            lines = LineIndex(text)
            s = lines.position(e.line, e.column)
            t = lines.position(e.end_line, e.end_column)
            out.setdefault(uri, []).append(types.TextEdit(
                range=types.Range(start=types.Position(line=s[0], character=s[1]),
                                  end=types.Position(line=t[0], character=t[1])),
                new_text=e.content))
        return out

    def fix_all_edit(self, path: str) -> types.WorkspaceEdit | None:
        fixed = self.session.fix_all(path)
        if fixed is None:
            return None
        if path in self.notebooks:
            return self._cell_edits(path, fixed)
        current = self.session.text_of(path) or ""
        end = LineIndex(current).end()
        return types.WorkspaceEdit(changes={self.uri_of(path): [types.TextEdit(
            range=types.Range(start=types.Position(line=0, character=0),
                              end=types.Position(line=end[0], character=end[1])),
            new_text=fixed)]})


    def _cell_edits(self, path: str, fixed_json: str) -> types.WorkspaceEdit | None:
        from trainlint.sources.notebook import cell_sources

        fixed = cell_sources(fixed_json)
        cells = self.cells(path)
        if fixed is None or len(fixed) != len(cells):
            return None
        changes: dict[str, list[types.TextEdit]] = {}
        for (uri, text), new in zip(cells, fixed):
            if new != text:
                end = LineIndex(text).end()
                changes[uri] = [types.TextEdit(range=types.Range(
                    start=types.Position(line=0, character=0), end=types.Position(line=end[0], character=end[1])),
                    new_text=new)]
        return types.WorkspaceEdit(changes=changes) if changes else None

    def notebook_text(self, nb: types.NotebookDocument) -> str:
        """The notebook as nbformat 4 JSON, from the editor's cells (unsaved text included)."""
        cells = []
        for c in nb.cells:
            source = self.workspace.get_text_document(c.document).source
            if c.kind == types.NotebookCellKind.Code:
                cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                              "source": source})
            else:
                cells.append({"cell_type": "markdown", "metadata": {}, "source": source})
        meta = dict(nb.metadata or {})
        meta.setdefault("language_info", {"name": "python"})
        return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def _overlaps(d: types.Range, r: types.Range) -> bool:
    a = (d.start.line, d.start.character), (d.end.line, d.end.character)
    b = (r.start.line, r.start.character), (r.end.line, r.end.character)
    return a[0] <= b[1] and b[0] <= a[1]


def build_server() -> TrainlintServer:
    server = TrainlintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TrainlintServer, params: types.InitializeParams) -> None:
        root = None
        if params.workspace_folders:
            root = uri_to_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = uri_to_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        ls.session.root = Path(root) if root else None

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TrainlintServer, params: types.InitializedParams) -> None:
        ls.worker.submit(ls.session.index)  # read the workspace once, before the first run needs it
        caps = ls.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if watched and watched.dynamic_registration:
            # settings (pyproject.toml) and the files of setups changed outside the editor
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="trainlint-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern=WATCHED_GLOB)]))]))

    def _path(ls: TrainlintServer, uri: str) -> str | None:
        p = uri_to_path(uri)
        if p is None:
            return None
        p = norm(p)
        ls.uris[p] = uri
        return p

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TrainlintServer, params: types.DidOpenTextDocumentParams) -> None:
        p = _path(ls, params.text_document.uri)
        if p is None:
            return
        ls.session.open(p, params.text_document.text, params.text_document.version)
        ls.schedule(p, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TrainlintServer, params: types.DidChangeTextDocumentParams) -> None:
        p = _path(ls, params.text_document.uri)
        if p is None:
            return
        doc = ls.workspace.get_text_document(params.text_document.uri)
        ls.session.change(p, doc.source, params.text_document.version)
        for affected in ls.session.affected_documents(p):
            ls.schedule(affected)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
    def did_save(ls: TrainlintServer, params: types.DidSaveTextDocumentParams) -> None:
        p = _path(ls, params.text_document.uri)
        if p is None:
            return
        ls.session.saved(p, params.text)
        if Path(p).name == "pyproject.toml":
            for d in list(ls.session.documents):
                ls.schedule(d, 0)
            return
        for affected in ls.session.affected_documents(p):
            ls.schedule(affected, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TrainlintServer, params: types.DidCloseTextDocumentParams) -> None:
        p = _path(ls, params.text_document.uri)
        if p is None:
            return
        task = ls.pending.pop(p, None)
        if task is not None:
            task.cancel()
        ls.session.close(p)
        ls.findings.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))
        for affected in ls.session.affected_documents(p)[1:]:
            ls.schedule(affected, 0)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: TrainlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        relint: set[str] = set()
        for change in params.changes:
            p = uri_to_path(change.uri)
            if p is None:
                continue
            p = norm(p)
            if Path(p).name == "pyproject.toml":
                ls.session.reload_settings()
                relint.update(ls.session.documents)
                continue
            if p not in ls.session.documents:
                ls.session.saved(p)
            relint.update(ls.session.affected_documents(p))
        for d in relint:
            if d in ls.session.documents:
                ls.schedule(d, 0)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]))
    async def code_action(ls: TrainlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        owner = ls.owner(uri)
        if owner is None:
            return []
        only = params.context.only
        want_quick = not only or any(str(k).startswith("quickfix") for k in only)
        want_all = not only or any(FIX_ALL_KIND.startswith(str(k)) for k in only)
        actions: list[types.CodeAction] = []
        found = ls.findings.get(uri, [])
        lines = LineIndex(ls.texts.get(uri, ""))
        raw = owner not in ls.notebooks
        if want_quick:
            for d in found:
                if d.fix is None:
                    continue
                lsp = ls.to_lsp(d, lines, raw=raw)
                if not _overlaps(lsp.range, params.range):
                    continue
                label = d.fix.message or f"Fix {d.code}"
                if d.fix.applicability == "unsafe":
                    label += " (unsafe: changes training numerics or behaviour)"
                actions.append(types.CodeAction(
                    title=f"trainlint: {label}", kind=types.CodeActionKind.QuickFix, diagnostics=[lsp],
                    is_preferred=d.fix.applicability == "safe",
                    edit=types.WorkspaceEdit(changes=ls.text_edits(d))))
        if want_all and any(d.fix is not None and d.fix.applicability == "safe" for d in found):
            loop = asyncio.get_running_loop()
            edit = await loop.run_in_executor(ls.worker, ls.fix_all_edit, owner)
            if edit is not None:
                actions.append(types.CodeAction(title="trainlint: apply all safe fixes",
                                                kind=FIX_ALL_KIND, edit=edit))
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TrainlintServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        owner = ls.owner(uri)
        if owner is None:
            return None
        lines = LineIndex(ls.texts.get(uri, ""))
        pos = params.position
        parts = []
        for d in ls.findings.get(uri, []):
            r = ls.to_lsp(d, lines, raw=owner not in ls.notebooks).range
            if (r.start.line, r.start.character) <= (pos.line, pos.character) <= (r.end.line, r.end.character):
                parts.append(_hover_text(d))
        if not parts:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value="\n\n---\n\n".join(parts)))

    # -- notebooks (LSP 3.17 notebook documents) -----------------------------------------

    def _notebook_opened(ls: TrainlintServer, nb: types.NotebookDocument) -> str | None:
        p = uri_to_path(nb.uri)
        if p is None:
            return None
        p = norm(p)
        ls.notebooks[p] = nb.uri
        ls.uris[p] = nb.uri
        ls.session.open(p, ls.notebook_text(nb), nb.version)
        return p

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(ls: TrainlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        p = _notebook_opened(ls, params.notebook_document)
        if p is not None:
            ls.schedule(p, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(ls: TrainlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        nb = ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        if nb is None:
            return
        p = _notebook_opened(ls, nb)
        if p is None:
            return
        # cells that went away lose their findings
        current = {c.document for c in nb.cells}
        structure = params.change.cells.structure if params.change.cells else None
        for gone in (structure.did_close or []) if structure else []:
            if gone.uri not in current:
                ls.findings.pop(gone.uri, None)
                ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=gone.uri, diagnostics=[]))
        for affected in ls.session.affected_documents(p):
            ls.schedule(affected)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def nb_save(ls: TrainlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        p = uri_to_path(params.notebook_document.uri)
        if p is not None and norm(p) in ls.notebooks:
            for affected in ls.session.affected_documents(norm(p)):
                ls.schedule(affected, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def nb_close(ls: TrainlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        p = uri_to_path(params.notebook_document.uri)
        if p is None:
            return
        p = norm(p)
        task = ls.pending.pop(p, None)
        if task is not None:
            task.cancel()
        ls.notebooks.pop(p, None)
        ls.session.close(p)
        for cell in params.cell_text_documents:
            ls.findings.pop(cell.uri, None)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))

    @server.command(SHOW_RULE)
    def show_rule(ls: TrainlintServer, args: Any = None) -> str:
        key = args[0] if isinstance(args, (list, tuple)) and args else args
        from trainlint.rules import get_rule
        from trainlint.rules.docs import render_markdown

        rule = get_rule(str(key or ""))
        if rule is None:
            raise ValueError(f"no rule {key!r} (see `trainlint rules`)")
        return render_markdown(rule)

    return server


def _hover_text(d: Diagnostic) -> str:
    from trainlint.rules import get_rule

    head = f"**{d.code} {d.name}** ({d.severity.value})\n\n{d.message}"
    rule = get_rule(d.code)
    if rule is None:
        return head
    why = _section(rule.doc(), "Why is this bad?")
    out = [head, f"*{rule.summary}*"]
    if why:
        out.append(why)
    out.append(f"[Rule page]({rule_url(rule.name)})")
    return "\n\n".join(out)


def _section(doc: str, title: str) -> str:
    lines = doc.splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            if inside:
                break
            inside = line[3:].strip() == title
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def serve() -> None:
    logging.basicConfig(level=logging.WARNING, format="trainlint server: %(message)s")
    build_server().start_io()
