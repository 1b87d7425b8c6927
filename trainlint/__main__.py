from trainlint.cli import entry

entry()
