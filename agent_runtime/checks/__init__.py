"""Checks on proposals and the score built from them (``scoring``), the sandbox that runs model
code (``sandbox``; the files that run inside it sit beside it), and each role's tools
(``role_checks``)."""
