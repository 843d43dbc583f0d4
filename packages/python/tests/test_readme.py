"""The README's examples are valid Python that uses only what the package exports."""

from __future__ import annotations

import ast
import os
import re
import unittest

import _support  # noqa: F401
import approvals

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


class Readme(unittest.TestCase):
    def test_every_python_example_compiles_and_imports_what_exists(self) -> None:
        with open(README, encoding="utf-8") as file:
            blocks = re.findall(r"```python\n(.*?)```", file.read(), re.S)
        self.assertGreaterEqual(len(blocks), 5)
        for block in blocks:
            tree = ast.parse(block)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == "approvals":
                    for alias in node.names:
                        self.assertTrue(hasattr(approvals, alias.name), alias.name)


if __name__ == "__main__":
    unittest.main()
