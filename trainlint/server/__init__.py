"""``trainlint server``: a language server (LSP over stdio) for editors.

``session`` holds what the server knows (documents, settings, setups, runs) without the
protocol; ``convert`` maps locations; ``protocol`` is the pygls layer. pygls and lsprotocol come
with the optional extra ``trainlint[server]``; the linter itself never imports them.
"""
