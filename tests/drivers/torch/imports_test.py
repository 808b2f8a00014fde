"""The Python packages' own imports form no cycle: orch_torch (the torch driver)
and orch_driver (the SDK), counting imports inside functions too, since a cycle
hidden behind a function-level import still ties two modules together."""

import ast
import os
import unittest

ROOT = os.environ.get("ORCH_SOURCE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PACKAGES = {"orch_torch": os.path.join(ROOT, "drivers", "torch", "orch_torch"),
            "orch_driver": os.path.join(ROOT, "drivers", "python", "orch_driver")}


def imported_modules(path, package):
    """The modules of `package` that the file at `path` imports, anywhere in it."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == package:  # from orch_torch import session
                found.update(package + "." + alias.name for alias in node.names)
            elif node.module.startswith(package + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(package + "."))
    return found


def import_graph(package, folder):
    modules = {package + "." + name[:-3]: os.path.join(folder, name)
               for name in os.listdir(folder) if name.endswith(".py") and name != "__init__.py"}
    return {module: imported_modules(path, package) & set(modules)
            for module, path in modules.items()}


def find_cycle(graph):
    """One cycle as a list of modules (the first repeated at the end), or None."""
    state = {}  # module -> "open" | "done"

    def visit(module, path):
        state[module] = "open"
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                return path[path.index(other):] + [other] if other in path else [module, other]
            if other not in state:
                cycle = visit(other, path + [other])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle:
                return cycle
    return None


class ImportsTest(unittest.TestCase):
    def test_no_package_has_an_import_cycle(self):
        for package, folder in PACKAGES.items():
            with self.subTest(package=package):
                self.assertIsNone(find_cycle(import_graph(package, folder)))

    def test_the_finder_sees_a_cycle_through_a_function_level_import(self):
        graph = {"p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": set()}
        self.assertEqual(find_cycle(graph), ["p.a", "p.b", "p.a"])

    def test_session_and_engine_import_each_other_no_more(self):
        graph = import_graph("orch_torch", PACKAGES["orch_torch"])
        self.assertIn("orch_torch.session", graph["orch_torch.engine"])
        self.assertNotIn("orch_torch.engine", graph["orch_torch.session"])


if __name__ == "__main__":
    unittest.main()
