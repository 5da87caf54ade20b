#!/usr/bin/env python3
"""The include-layer check (ARCHITECTURE.md): every `#include "M/..."` in src/ follows the layers.

A module is a folder of src/ that src/CMakeLists.txt builds as a library with
`steptp_add_module(NAME DIR DEPS ...)`; its layer is what it links. A source of module A may
include a header of module B only if A is B or A links B (directly or through its DEPS), so the
include graph can never point up or sideways past what the build declares, and the module graph
has no cycle. The drivers on top (src/driver/cli, src/driver/mpi) may include any module.

Two checks keep the documents true to the tree: every `src/...` path that README.md, ARCHITECTURE.md
or docs/*.md names exists, and README.md's layout table has a row for every folder of src/.

Usage: scripts/check_layers.py [SRC_DIR]   (exit 1 with one line per violation)
"""
import pathlib
import re
import sys

# The folder above every library: the CLI executable and the MPI cluster backends (driver/cli,
# driver/mpi) may include any module.
DRIVERS = "driver"

MODULE = re.compile(r"steptp_add_module\(\s*(\w+)\s+(\S+)((?:\s+[^)\s]+)*)\s*\)")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+/[^"]+)"', re.M)


SET = re.compile(r"set\(\s*(\w+)((?:\s+[^)\s]+)*)\s*\)")
APPEND = re.compile(r"list\(\s*APPEND\s+(\w+)((?:\s+[^)\s]+)*)\s*\)")


def declared_modules(cmake_text):
    """{dir: set of module dirs it links directly}, in declaration order (${VAR}s of set() and
    list(APPEND) expanded: a conditional APPEND counts, as a link the build may make)."""
    variables = {}
    for name, rest in SET.findall(cmake_text):
        variables[name] = rest.split()
    for name, rest in APPEND.findall(cmake_text):
        variables.setdefault(name, []).extend(rest.split())
    names = {}
    deps = {}
    for name, folder, rest in MODULE.findall(cmake_text):
        tokens = []
        for t in rest.split():
            v = re.fullmatch(r"\$\{(\w+)\}", t)
            tokens.extend(variables.get(v.group(1), []) if v else [t])
        linked = [t[len("steptp_"):] for t in tokens if t.startswith("steptp_")]
        names[name] = folder
        deps[folder] = linked
    # DEPS name modules; the check is in folders.
    return {folder: {names.get(d, d) for d in ds} for folder, ds in deps.items()}


def closure(deps):
    """Transitive links; raises on a cycle (a module may only link modules declared before it)."""
    order = list(deps)
    for i, m in enumerate(order):
        for d in deps[m]:
            if d in deps and order.index(d) >= i:
                raise SystemExit(f"check_layers: module {m} links {d}, declared after it (a cycle or an upward link)")
    reach = {}
    for m in order:
        r = set()
        for d in deps[m]:
            r.add(d)
            r |= reach.get(d, set())
        reach[m] = r
    return reach


def module_of(path, modules):
    """The module folder (a key of `modules`, e.g. "ir/leir") that holds `path` (relative to src/,
    in / form), "driver" for the drivers, or None."""
    if path.split("/")[0] == DRIVERS:
        return DRIVERS
    return next((m for m in modules if path.startswith(m + "/")), None)


def violations(src):
    reach = closure(declared_modules((src / "CMakeLists.txt").read_text()))
    out = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        module = module_of(path.relative_to(src).as_posix(), reach)
        if module is None or module == DRIVERS:
            continue
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            target = module_of(m.group(1), reach)
            if target is None or target == module:
                continue
            if target == DRIVERS or target not in reach[module]:
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{path.relative_to(src.parent)}:{line}: module {module} includes {target}/, "
                           f"which it does not link (src/CMakeLists.txt DEPS of {module})")
    return out


# A path under src/ as documents write it (not build/src/..., the binaries' folder); trailing
# punctuation of the sentence is not part of it.
DOC_PATH = re.compile(r"(?<![\w/.-])src/[A-Za-z0-9_./-]*[A-Za-z0-9_/]")
LAYOUT_ROW = re.compile(r"^\|\s*`src/([a-z_/]+)/`\s*\|([^|]*)\|", re.M)


def documents(root):
    return [root / "README.md", root / "ARCHITECTURE.md", *sorted((root / "docs").glob("*.md"))]


def missing_doc_paths(root):
    """One line per `src/...` path named in the documents that does not exist in the tree."""
    out = []
    for doc in documents(root):
        if not doc.exists():
            continue
        text = doc.read_text(errors="replace")
        for m in DOC_PATH.finditer(text):
            if not (root / m.group(0)).exists():
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{doc.relative_to(root)}:{line}: names {m.group(0)}, which does not exist")
    return out


def layout_table_mismatches(root):
    """One line per folder of src/ that README.md's layout table has no `src/NAME/` row for, and per
    library row whose links column (backquoted module names) is not what src/CMakeLists.txt
    declares it links directly."""
    rows = {name: set(re.findall(r"`([a-z_/]+)`", links))
            for name, links in LAYOUT_ROW.findall((root / "README.md").read_text())}
    declared = declared_modules((root / "src" / "CMakeLists.txt").read_text())
    # Every folder of src/ and every folder of a layer folder (ir/, front/, ...: one that is not a
    # module itself) has a row.
    folders = []
    for d in sorted((root / "src").iterdir()):
        if d.is_dir():
            folders.append(d.name)
            if d.name not in declared:
                folders += [f"{d.name}/{c.name}" for c in sorted(d.iterdir()) if c.is_dir()]
    out = [f"README.md: the layout table has no row for src/{f}/" for f in folders if f not in rows]
    for name, links in sorted(rows.items()):
        if name in declared:
            want = {d for d in declared[name] if d in declared}
            if links != want:
                out.append(f"README.md: the layout table says src/{name}/ links {sorted(links)}, "
                           f"src/CMakeLists.txt {sorted(want)}")
    return out


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent / "src")
    bad = violations(src)
    if len(sys.argv) <= 1:  # the documents are checked on the real tree only
        bad += missing_doc_paths(src.parent) + layout_table_mismatches(src.parent)
    for line in bad:
        print(line)
    if bad:
        print(f"check_layers: {len(bad)} problem(s)")
        return 1
    print(f"check_layers: every include of {src} follows the module layers; the documents name existing paths")
    return 0


if __name__ == "__main__":
    sys.exit(main())
