"""A real LSP client (pygls) driving `trainlint server` over stdio, for the server tests."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Callable

from lsprotocol import types
from pygls.lsp.client import LanguageClient

TIMEOUT = 60.0


class TrainlintClient:
    def __init__(self) -> None:
        self.client = LanguageClient("trainlint-tests", "0")
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.versions: dict[str, int | None] = {}
        self.publishes: list[str] = []
        self.logs: list[str] = []
        self._changed = asyncio.Condition()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            async with self._changed:
                self.diagnostics[params.uri] = params.diagnostics
                self.versions[params.uri] = params.version
                self.publishes.append(params.uri)
                self._changed.notify_all()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            self.logs.append(params.message)

    async def start(self, root: Path) -> types.InitializeResult:
        exe = shutil.which("trainlint")
        if exe is None:  # pragma: no cover - the package is installed for the tests
            await self.client.start_io(sys.executable, "-m", "trainlint", "server")
        else:
            await self.client.start_io(exe, "server")
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(notebook_document=types.NotebookDocumentClientCapabilities(
                synchronization=types.NotebookDocumentSyncClientCapabilities())), root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)])), TIMEOUT)
        self.client.initialized(types.InitializedParams())
        return result

    async def wait_for(self, uri: str, pred: Callable[[list[types.Diagnostic]], bool],
                       timeout: float = TIMEOUT) -> list[types.Diagnostic]:
        async def _wait() -> list[types.Diagnostic]:
            async with self._changed:
                while not (uri in self.diagnostics and pred(self.diagnostics[uri])):
                    await self._changed.wait()
                return self.diagnostics[uri]
        return await asyncio.wait_for(_wait(), timeout)

    def open(self, path: Path, language: str = "python", version: int = 1) -> str:
        uri = path.as_uri()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id=language, version=version, text=path.read_text())))
        return uri

    def change_full(self, uri: str, text: str, version: int) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
            self.client.exit(None)
        finally:
            await self.client.stop()


def codes(diags: list[types.Diagnostic]) -> set[str]:
    return {str(d.code) for d in diags}


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (UTF-16 columns) to ``text``, as an editor would."""
    lines = text.split("\n")

    def offset(pos: types.Position) -> int:
        line = lines[pos.line] if pos.line < len(lines) else ""
        units = 0
        col = 0
        for col, ch in enumerate(line):
            if units >= pos.character:
                break
            units += 2 if ord(ch) > 0xFFFF else 1
        else:
            col = len(line)
        return sum(len(x) + 1 for x in lines[:pos.line]) + col

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        s, t = offset(e.range.start), offset(e.range.end)
        text = text[:s] + e.new_text + text[t:]
        lines = text.split("\n")
    return text
