"""The Python reader's index as it was first written (a recursive visit of every node), kept as
the reference the single-pass index (``PythonFile._walk_index``) is compared with: the same
calls, statements, scopes, bindings and attributes, in the same order."""

from __future__ import annotations

import ast

from trainlint.sources.python import Binding, CallSite, PythonFile, Scope, child_nodes, walk_nodes


class ReferencePythonFile(PythonFile):
    """A ``PythonFile`` indexed by the recursive visit."""

    def _walk_index(self) -> None:
        self._walk_body(self.tree.body, self.module_scope, None, False)

    def _walk_body(self, body: list[ast.stmt], scope: Scope, fn: ast.AST | None, lam: bool) -> None:
        for stmt in body:
            self._visit_stmt(stmt, scope, fn, lam)

    def _visit_stmt(self, stmt: ast.stmt, scope: Scope, fn: ast.AST | None, lam: bool) -> None:
        self.statements.append((stmt, scope))
        self._bind_stmt(stmt, scope)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = stmt.args
            # the walk below reaches what is under these, not the expressions themselves, nor the
            # annotations: their attributes are noted here
            self._note_attributes(stmt.decorator_list + a.defaults + [d for d in a.kw_defaults if d is not None])
            for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                if p.annotation is not None:
                    self._note_attributes(walk_nodes(p.annotation))
            if stmt.returns is not None:
                self._note_attributes(walk_nodes(stmt.returns))
            for d in stmt.decorator_list:
                self._walk_node(d, scope, stmt, fn, lam)
            for default in a.defaults + [d for d in a.kw_defaults if d is not None]:
                self._walk_node(default, scope, stmt, fn, lam)
            inner = self._new_scope(stmt, scope, "function")
            for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                inner.bind(Binding(p.arg, p, None, "param"))
            self._walk_body(stmt.body, inner, stmt, False)
        elif isinstance(stmt, ast.ClassDef):
            self._note_attributes(stmt.bases + stmt.decorator_list + [k.value for k in stmt.keywords])
            for b in stmt.bases + stmt.decorator_list + [k.value for k in stmt.keywords]:
                self._walk_node(b, scope, stmt, fn, lam)
            inner = self._new_scope(stmt, scope, "class")
            self._walk_body(stmt.body, inner, fn, lam)
        else:
            self._walk_node(stmt, scope, stmt, fn, lam)

    def _bind_target(self, target: ast.expr, scope: Scope, stmt: ast.AST, value: ast.expr | None, kind: str) -> None:
        if isinstance(target, ast.Name):
            scope.bind(Binding(target.id, stmt, value, kind))
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                self._bind_target(t, scope, stmt, values[i] if values else None, kind if values else "other")
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, scope, stmt, None, "other")

    def _bind_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                self._bind_target(t, scope, stmt, stmt.value if len(stmt.targets) == 1 else None,
                                  "assign" if len(stmt.targets) == 1 else "other")
        elif isinstance(stmt, ast.AnnAssign):
            self._bind_target(stmt.target, scope, stmt, stmt.value, "annassign" if stmt.value else "other")
        elif isinstance(stmt, ast.AugAssign):
            self._bind_target(stmt.target, scope, stmt, None, "augassign")
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._bind_target(stmt.target, scope, stmt, None, "for")
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, scope, stmt, None, "with")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope.bind(Binding(stmt.name, stmt, None, "def"))
        elif isinstance(stmt, ast.ClassDef):
            scope.bind(Binding(stmt.name, stmt, None, "class"))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for a in stmt.names:
                name = a.asname or a.name.split(".", 1)[0]
                if name != "*":
                    scope.bind(Binding(name, stmt, None, "import"))
        elif isinstance(stmt, ast.Global):
            scope.globals_.update(stmt.names)
        elif isinstance(stmt, ast.Try):
            for h in stmt.handlers:
                if h.name:
                    scope.bind(Binding(h.name, h, None, "other"))

    def _new_scope(self, node: ast.AST, scope: Scope, kind: str) -> Scope:
        s = Scope(node, scope, kind)
        self.scope_of_def[node] = s
        return s

    def _walk_node(self, node: ast.AST, scope: Scope, stmt: ast.stmt, fn: ast.AST | None, lam: bool) -> None:
        """Visit what is under ``node``: nested statements, lambdas and calls."""
        for child in child_nodes(node):
            if isinstance(child, ast.stmt):
                self._visit_stmt(child, scope, fn, lam)
            else:
                self._visit_expr(child, scope, stmt, fn, lam)

    def _visit_expr(self, node: ast.AST, scope: Scope, stmt: ast.stmt, fn: ast.AST | None, lam: bool) -> None:
        if isinstance(node, ast.Lambda):
            inner = self._new_scope(node, scope, "lambda")
            a = node.args
            for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                inner.bind(Binding(p.arg, p, None, "param"))
            for default in a.defaults + [d for d in a.kw_defaults if d is not None]:
                self._visit_expr(default, scope, stmt, fn, lam)
            self._visit_expr(node.body, inner, stmt, node, True)
            return
        t = type(node)
        if t is ast.Attribute:
            self._attribute_nodes.append(node)  # type: ignore[arg-type]
        elif t is ast.NamedExpr:
            self._bind_target(node.target, scope, stmt, node.value, "assign")  # type: ignore[attr-defined]
        elif t is ast.Call:
            self.calls.append(CallSite(node, scope, stmt, lam, fn))  # type: ignore[arg-type]
        self._walk_node(node, scope, stmt, fn, lam)

    def _note_attributes(self, nodes: list[ast.AST]) -> None:
        self._attribute_nodes.extend(n for n in nodes if type(n) is ast.Attribute)  # type: ignore[misc]
