#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The layers of libvoxfe and the programs (README.md, "Layout"), checked on
the sources where the build cannot check them:

- an include by a relative path ("../import/x.h") gets around the include
  paths each layer is compiled with (the CMake object libraries): every
  quoted include must name a file of the layer itself or a public header
  of a layer it may use;
- the installed public headers (<layer>/include/voxfe/*.h) include only
  other public headers, never voxfe/device/ (the interface between layers,
  not installed) nor a private header;
- the engine asks its backends what they are (vox_backend_device), never
  compares their names.

  check_layers.py SOURCE_DIR
Prints one line per problem and exits 1 if there is any."""
import os
import re
import sys

src = os.path.abspath(sys.argv[1])

# layer -> the folders whose headers it may include (its own folder first)
LAYERS = {
    "engine": ["engine"],
    # the engine's CUDA backend implements the engine's private backend interface
    "cuda": ["cuda", "engine"],
    "io": ["io", "engine/include"],
    "import": ["import", "io/include", "engine/include"],
    "export": ["export", "io/include", "engine/include"],
    "cli": ["cli", "export/include", "import/include", "io/include", "engine/include"],
}
PUBLIC = ["engine/include", "io/include", "import/include", "export/include"]
SOURCE = re.compile(r"\.(c|h|cpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NAME_COMPARE = re.compile(r"strcmp\s*\([^;]*(vox_backend_name\s*\(|->name\b)")

problems = []


def inside(path, folder):
    folder = os.path.join(src, folder)
    return os.path.commonpath([path, folder]) == folder


def sources(folder):
    for root, _, files in os.walk(os.path.join(src, folder)):
        for f in sorted(files):
            if SOURCE.search(f):
                yield os.path.join(root, f)


def resolve(including, name, search):
    """The file an #include "name" in `including` reads: the including
    file's folder first, then the include path `search`."""
    for d in [os.path.dirname(including)] + [os.path.join(src, s) for s in search]:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def rel(p):
    return os.path.relpath(p, src)


for layer, allowed in LAYERS.items():
    for f in sources(layer):
        text = open(f, encoding="utf-8", errors="replace").read()
        for name in INCLUDE.findall(text):
            target = resolve(f, name, allowed)
            if target is None:
                continue  # not a file of the tree: the compiler says so
            if not any(inside(target, a) for a in allowed):
                problems.append(f"{rel(f)}: includes {rel(target)}, which the {layer} layer may "
                                f"not see (it may use: {', '.join(allowed)})")
        if layer in ("engine", "cuda"):
            for m in NAME_COMPARE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel(f)}:{line}: compares a backend's name; ask "
                                f"vox_backend_device instead")

for pub in PUBLIC:
    for f in sources(pub):
        if inside(f, "engine/include/voxfe/device"):
            continue
        text = open(f, encoding="utf-8", errors="replace").read()
        for name in INCLUDE.findall(text):
            target = resolve(f, name, PUBLIC)
            public = target is not None and any(inside(target, p) for p in PUBLIC) and \
                not inside(target, "engine/include/voxfe/device")
            if not public:
                problems.append(f"{rel(f)}: a public header includes \"{name}\", which is not "
                                f"installed")

for p in problems:
    print(p)
print(f"{len(problems)} problem(s) in the layers" if problems else "the layers hold")
sys.exit(1 if problems else 0)
