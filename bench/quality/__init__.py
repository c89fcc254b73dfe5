"""Quality harness: one agent vs majority vote vs the council, on problems with checkable answers.

.venv/bin/python -m bench.quality --url http://127.0.0.1:8000 --model M [--problems 4]
"""
