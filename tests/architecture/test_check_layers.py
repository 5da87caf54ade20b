"""scripts/check_layers.py: the real tree follows its layers, and the check sees a breach."""
import importlib.util
import pathlib
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_layers", ROOT / "scripts" / "check_layers.py")
check_layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_layers)

CMAKE = """
steptp_add_module(base base DEPS fmt::fmt)
steptp_add_module(leir ir/leir DEPS steptp_base nlohmann_json::nlohmann_json)
set(_tune_deps steptp_leir)
list(APPEND _tune_deps SQLite::SQLite3)
steptp_add_module(tune search/tune DEPS ${_tune_deps})
"""


def tree(files):
    d = tempfile.TemporaryDirectory()
    src = pathlib.Path(d.name) / "src"
    (src).mkdir()
    (src / "CMakeLists.txt").write_text(CMAKE)
    for path, text in files.items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text)
    return d, src


class CheckLayers(unittest.TestCase):
    def test_real_tree_follows_the_layers(self):
        self.assertEqual(check_layers.violations(ROOT / "src"), [])

    def test_downward_and_transitive_includes_pass(self):
        d, src = tree({"search/tune/a.cc": '#include "ir/leir/ast.h"\n#include "base/x.h"\n#include "search/tune/a.h"\n'})
        with d:
            self.assertEqual(check_layers.violations(src), [])

    def test_upward_include_is_reported_with_file_and_line(self):
        d, src = tree({"ir/leir/ast.cc": '// x\n#include "ir/leir/ast.h"\n#include "search/tune/tuner.h"\n',
                       "base/b.cc": '#include "driver/cli/main.h"\n'})
        with d:
            found = check_layers.violations(src)
        self.assertEqual(len(found), 2)
        self.assertTrue(any(f.startswith("src/ir/leir/ast.cc:3: module ir/leir includes search/tune/") for f in found), found)
        self.assertTrue(any(f.startswith("src/base/b.cc:1: module base includes driver/") for f in found), found)

    def test_a_module_linking_a_later_one_is_a_cycle(self):
        d, src = tree({})
        with d:
            (src / "CMakeLists.txt").write_text(CMAKE.replace("DEPS fmt::fmt", "DEPS steptp_tune"))
            with self.assertRaises(SystemExit):
                check_layers.violations(src)


class DocumentsMatchTheTree(unittest.TestCase):
    def test_real_documents_name_existing_paths(self):
        self.assertEqual(check_layers.missing_doc_paths(ROOT), [])

    def test_real_layout_table_lists_every_folder_and_its_links(self):
        self.assertEqual(check_layers.layout_table_mismatches(ROOT), [])

    def doc_tree(self, readme, folders):
        d = tempfile.TemporaryDirectory()
        root = pathlib.Path(d.name)
        for f in folders:
            (root / "src" / f).mkdir(parents=True)
        (root / "src" / "ir" / "leir" / "ast.h").write_text("")
        (root / "src" / "CMakeLists.txt").write_text(CMAKE)
        (root / "docs").mkdir()
        (root / "README.md").write_text(readme)
        return d, root

    def test_a_missing_path_is_reported_with_line(self):
        d, root = self.doc_tree("intro\nsee `src/ir/leir/ast.h`, src/ir/leir/gone.h. and build/src/steptp\n", ["ir/leir"])
        with d:
            self.assertEqual(check_layers.missing_doc_paths(root),
                             ["README.md:2: names src/ir/leir/gone.h, which does not exist"])

    def test_a_folder_without_a_layout_row_is_reported(self):
        d, root = self.doc_tree("| `src/ir/` | — | layer |\n| `src/ir/leir/` | `base` | the IR |\n", ["ir/leir", "base"])
        with d:
            self.assertEqual(check_layers.layout_table_mismatches(root),
                             ["README.md: the layout table has no row for src/base/"])

    def test_a_links_column_unlike_the_build_is_reported(self):
        d, root = self.doc_tree("| `src/base/` | — | x |\n| `src/ir/` | — | x |\n| `src/ir/leir/` | `base` | x |\n"
                                "| `src/search/` | — | x |\n| `src/search/tune/` | `base` | x |\n",
                                ["ir/leir", "base", "search/tune"])
        with d:
            self.assertEqual(check_layers.layout_table_mismatches(root),
                             ["README.md: the layout table says src/search/tune/ links ['base'], src/CMakeLists.txt ['ir/leir']"])


if __name__ == "__main__":
    unittest.main()
