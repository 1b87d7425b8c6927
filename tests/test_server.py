"""`trainlint server` driven over stdio by a real LSP client (pygls): initialize, open/change/
save, diagnostics and ranges, a cross-file update, code actions applied to the text, fix-all,
hover, the rule-page command, settings reload, malformed input and shutdown."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402

from lsp_client import TrainlintClient, apply_edits, codes  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SCRIPT = '''\
import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

device = torch.device("cuda")
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
model.to(device)

args = TrainingArguments(output_dir="out", logging_steps=1, max_steps=5000)
trainer = Trainer(model=model, args=args)
trainer.train()
'''


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "train.py").write_text(SCRIPT)
    return tmp_path


async def _session(root: Path, body):
    client = TrainlintClient()
    init = await client.start(root)
    try:
        await body(client, init)
    finally:
        await client.stop()


def test_initialize_open_diagnostics_and_ranges(workspace: Path) -> None:
    async def body(c: TrainlintClient, init: types.InitializeResult) -> None:
        caps = init.capabilities
        assert caps.hover_provider
        assert "source.fixAll.trainlint" in [str(k) for k in caps.code_action_provider.code_action_kinds]
        assert init.server_info.name == "trainlint"
        uri = c.open(workspace / "train.py")
        diags = await c.wait_for(uri, lambda d: "TL101" in codes(d))
        tl101 = next(d for d in diags if d.code == "TL101")
        # `model.to(device)` on line 6 (0-based 5), columns 0-16
        assert (tl101.range.start.line, tl101.range.start.character) == (5, 0)
        assert (tl101.range.end.line, tl101.range.end.character) == (5, 16)
        assert tl101.severity == types.DiagnosticSeverity.Warning
        assert tl101.source == "trainlint"
        assert tl101.code_description.href.endswith("/rules/manual-device-placement.md")
        assert "manual-device-placement" in tl101.message
        # related information: where the model reaches the Trainer
        assert tl101.related_information and tl101.related_information[0].location.uri == uri
        assert tl101.related_information[0].location.range.start.line == 8
        # same findings as the command line
        out = subprocess.run(["trainlint", "check", "--format", "json", str(workspace / "train.py")],
                             capture_output=True, text=True, cwd=workspace)
        import json

        cli = {(d["code"], d["line"] - 1, d["column"] - 1) for d in json.loads(out.stdout)}
        lsp = {(str(d.code), d.range.start.line, d.range.start.character) for d in diags}
        assert lsp == cli

    run(_session(workspace, body))


def test_unsaved_change_is_checked_from_the_buffer(workspace: Path) -> None:
    async def body(c: TrainlintClient, init) -> None:
        uri = c.open(workspace / "train.py")
        await c.wait_for(uri, lambda d: "TL101" in codes(d))
        c.change_full(uri, SCRIPT.replace("model.to(device)\n", ""), 2)
        diags = await c.wait_for(uri, lambda d: c.versions.get(uri) == 2)
        assert "TL101" not in codes(diags)
        assert "TL201" in codes(diags)  # the rest is still reported
        # the file on disk was not touched
        assert "model.to(device)" in (workspace / "train.py").read_text()
        # incremental change: insert a line back
        c.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=5, character=0),
                                  end=types.Position(line=5, character=0)),
                text="model.cuda()\n")]))
        diags = await c.wait_for(uri, lambda d: c.versions.get(uri) == 3)
        assert "TL101" in codes(diags)

    run(_session(workspace, body))


def test_cross_file_update(tmp_path: Path) -> None:
    setup = tmp_path / "glue"
    shutil.copytree(EXAMPLES / "glue_cli", setup)
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\ngpu = \"A100\"\n")

    async def body(c: TrainlintClient, init) -> None:
        run_sh = c.open(setup / "run.sh", "shellscript")
        ds = c.open(setup / "ds_zero1.json", "json")
        diags = await c.wait_for(ds, lambda d: "TL301" in codes(d))
        tl301 = next(d for d in diags if d.code == "TL301")
        assert any(r.location.uri == run_sh for r in tl301.related_information)
        # editing the launch line (unsaved) re-publishes the DeepSpeed config's findings
        text = (setup / "run.sh").read_text().replace("--per_device_train_batch_size 8",
                                                     "--per_device_train_batch_size 16")
        c.change_full(run_sh, text, 2)
        diags = await c.wait_for(ds, lambda d: "TL301" not in codes(d))
        assert "TL301" not in codes(diags)
        # and editing the config re-publishes the launch script's
        c.change_full(run_sh, (setup / "run.sh").read_text(), 3)
        await c.wait_for(ds, lambda d: "TL301" in codes(d))
        cfg = (setup / "ds_zero1.json").read_text().replace('"train_micro_batch_size_per_gpu": 16',
                                                           '"train_micro_batch_size_per_gpu": 8')
        before = c.publishes.count(run_sh)
        c.change_full(ds, cfg, 2)
        await c.wait_for(ds, lambda d: "TL301" not in codes(d) and c.versions.get(ds) == 2)
        await c.wait_for(run_sh, lambda d: c.publishes.count(run_sh) > before)

    run(_session(tmp_path, body))


def test_code_actions_quick_fix_and_fix_all(workspace: Path) -> None:
    async def body(c: TrainlintClient, init) -> None:
        uri = c.open(workspace / "train.py")
        diags = await c.wait_for(uri, lambda d: "TL101" in codes(d))
        tl101 = next(d for d in diags if d.code == "TL101")
        actions = await c.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=tl101.range,
            context=types.CodeActionContext(diagnostics=[tl101], only=[types.CodeActionKind.QuickFix])))
        quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
        assert quick and all("TL" in str(a.diagnostics[0].code) for a in quick)
        fixed = apply_edits(SCRIPT, quick[0].edit.changes[uri])
        assert "model.to(device)" not in fixed
        compile(fixed, "train.py", "exec")  # still Python
        # fix-all: every safe fix of the document, the same text as `trainlint fix --apply`
        actions = await c.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.trainlint"])))
        assert [a.kind for a in actions] == ["source.fixAll.trainlint"]
        all_fixed = apply_edits(SCRIPT, actions[0].edit.changes[uri])
        copy = workspace / "copy"
        copy.mkdir()
        (copy / "train.py").write_text(SCRIPT)
        subprocess.run(["trainlint", "fix", "--apply", str(copy / "train.py")], capture_output=True, cwd=workspace)
        assert all_fixed == (copy / "train.py").read_text()
        assert all_fixed != SCRIPT

    run(_session(workspace, body))


def test_unsafe_fix_is_labelled_and_not_in_fix_all(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', fp16=True, max_steps=10000)\n")
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\ngpu = \"A100-80GB\"\n")

    async def body(c: TrainlintClient, init) -> None:
        uri = c.open(tmp_path / "train.py")
        diags = await c.wait_for(uri, lambda d: "TL501" in codes(d))
        d = next(x for x in diags if x.code == "TL501")
        actions = await c.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=d.range,
            context=types.CodeActionContext(diagnostics=[d])))
        unsafe = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and "unsafe" in a.title]
        assert unsafe, [a.title for a in actions]
        assert not unsafe[0].is_preferred
        fix_all = [a for a in actions if a.kind == "source.fixAll.trainlint"]
        for a in fix_all:  # safe fixes only: fp16 stays
            assert "fp16=True" in apply_edits((tmp_path / "train.py").read_text(), a.edit.changes[uri])

    run(_session(tmp_path, body))


def test_hover_and_rule_page_command(workspace: Path) -> None:
    async def body(c: TrainlintClient, init) -> None:
        uri = c.open(workspace / "train.py")
        await c.wait_for(uri, lambda d: "TL101" in codes(d))
        hover = await c.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=3)))
        assert hover is not None
        assert "TL101 manual-device-placement" in hover.contents.value
        assert "/rules/manual-device-placement.md" in hover.contents.value
        nothing = await c.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)))
        assert nothing is None
        page = await c.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="trainlint.showRule", arguments=["TL101"]))
        assert "## What it does" in page and "manual-device-placement" in page

    run(_session(workspace, body))


def test_settings_reload_when_pyproject_changes(workspace: Path) -> None:
    async def body(c: TrainlintClient, init) -> None:
        uri = c.open(workspace / "train.py")
        await c.wait_for(uri, lambda d: "TL201" in codes(d))
        (workspace / "pyproject.toml").write_text("[tool.trainlint]\nignore = [\"TL201\"]\n")
        c.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=(workspace / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]))
        diags = await c.wait_for(uri, lambda d: "TL201" not in codes(d))
        assert "TL101" in codes(diags)

    run(_session(workspace, body))


def test_broken_file_and_malformed_request_leave_the_server_alive(workspace: Path) -> None:
    (workspace / "broken.py").write_text("from transformers import Trainer\ndef f(:\n")

    async def body(c: TrainlintClient, init) -> None:
        bad = c.open(workspace / "broken.py")
        diags = await c.wait_for(bad, lambda d: bool(d))
        assert "TL001" in codes(diags)
        # a request with invalid parameters gets an error answer, not a dead server
        with pytest.raises(Exception):
            await asyncio.wait_for(c.client.protocol.send_request_async(
                "textDocument/hover", {"textDocument": 5}), 30)
        # a message that is not JSON at all
        c.client._server.stdin.write(b"Content-Length: 9\r\n\r\n{not json")
        await c.client._server.stdin.drain()
        uri = c.open(workspace / "train.py")
        diags = await c.wait_for(uri, lambda d: "TL101" in codes(d))
        assert diags

    run(_session(workspace, body))


def test_close_clears_diagnostics(workspace: Path) -> None:
    async def body(c: TrainlintClient, init) -> None:
        uri = c.open(workspace / "train.py")
        await c.wait_for(uri, lambda d: bool(d))
        c.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        await c.wait_for(uri, lambda d: len(d) == 0)

    run(_session(workspace, body))


def test_watches_settings_and_setup_files_when_the_client_can(workspace: Path) -> None:
    async def main() -> None:
        c = TrainlintClient()
        registrations: list[types.RegistrationParams] = []

        @c.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            registrations.append(params)

        import shutil as _sh

        await c.client.start_io(_sh.which("trainlint"), "server")
        await c.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True))),
            root_uri=workspace.as_uri()))
        c.client.initialized(types.InitializedParams())
        uri = c.open(workspace / "train.py")
        await c.wait_for(uri, lambda d: bool(d))
        await c.stop()
        (reg,) = [r for p in registrations for r in p.registrations]
        assert reg.method == "workspace/didChangeWatchedFiles"
        assert "pyproject.toml" in str(reg.register_options)

    run(main())


NB_CELLS = [
    (types.NotebookCellKind.Markup, "# Fine-tune BERT\n"),
    (types.NotebookCellKind.Code, "!pip install transformers\nimport torch\n"
                                  "from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
                                  "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')"),
    (types.NotebookCellKind.Code, "model.to('cuda')"),
    (types.NotebookCellKind.Code, "args = TrainingArguments(output_dir='o', logging_steps=1, max_steps=5000)\n"
                                  "trainer = Trainer(model=model, args=args)\ntrainer.train()"),
]


def _open_notebook(c: TrainlintClient, path: Path, cells=NB_CELLS) -> list[str]:
    uris = [f"vscode-notebook-cell:{path}#cell{i}" for i in range(len(cells))]
    c.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=k, document=u) for (k, _), u in zip(cells, uris)]),
        cell_text_documents=[types.TextDocumentItem(uri=u, language_id="python" if k == types.NotebookCellKind.Code
                                                    else "markdown", version=1, text=t)
                             for (k, t), u in zip(cells, uris)]))
    return uris


def test_notebook_documents_findings_on_their_cells(tmp_path: Path) -> None:
    nb_path = tmp_path / "finetune.ipynb"
    nb_path.write_text("{}")  # the editor's cells are what is checked, not the file

    async def body(c: TrainlintClient, init) -> None:
        sync = init.capabilities.notebook_document_sync
        assert sync is not None and sync.notebook_selector
        uris = _open_notebook(c, nb_path)
        diags = await c.wait_for(uris[2], lambda d: "TL101" in codes(d))
        tl101 = next(d for d in diags if d.code == "TL101")
        assert (tl101.range.start.line, tl101.range.start.character) == (0, 0)
        assert tl101.range.end.character == len("model.to('cuda')")
        # the related place is in another cell
        assert tl101.related_information[0].location.uri == uris[3]
        low = await c.wait_for(uris[3], lambda d: "TL201" in codes(d))
        assert next(d for d in low if d.code == "TL201").range.start.line == 0
        assert len(await c.wait_for(uris[0], lambda d: True)) == 0  # the markdown cell
        # a quick fix edits the cell's text
        actions = await c.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]), range=tl101.range,
            context=types.CodeActionContext(diagnostics=[tl101], only=[types.CodeActionKind.QuickFix])))
        (fix,) = [a for a in actions if "TL101" in str(a.diagnostics[0].code)]
        assert list(fix.edit.changes) == [uris[2]]
        assert "model.to" not in apply_edits(NB_CELLS[2][1], fix.edit.changes[uris[2]])
        # hover in the cell
        hover = await c.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris[2]), position=types.Position(line=0, character=2)))
        assert "TL101" in hover.contents.value
        # editing the cell (unsaved) re-checks the notebook
        c.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb_path.as_uri(), version=2),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=uris[2], version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(text="print(model)")])]))))
        await c.wait_for(uris[2], lambda d: "TL101" not in codes(d))
        # fix-all: safe fixes as whole-cell edits
        actions = await c.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uris[3]),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.trainlint"])))
        for a in actions:
            assert set(a.edit.changes) <= set(uris)
        c.client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=nb_path.as_uri()),
            cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in uris]))
        await c.wait_for(uris[3], lambda d: len(d) == 0)

    run(_session(tmp_path, body))
