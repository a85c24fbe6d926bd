# SPDX-License-Identifier: BSD-3-Clause
# voxfe-voxelize --mesh: a box part from an ASCII STL with a passive solid
# (binary STL whose header starts with "solid") and a passive void (OBJ), and
# from a 3MF,
# voxel size and origin carried into the model; then bad meshes: exit 2, one
# line naming the file and the cause, no output file.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

# stl_box FILE X0 Y0 Z0 X1 Y1 Z1: the box as an ASCII STL, 12 facets.
stl_box() {
  "$PY" - "$@" <<'PY'
import sys
f, x0, y0, z0, x1, y1, z1 = sys.argv[1], *map(float, sys.argv[2:])
c = [(x, y, z) for z in (z0, z1) for y in (y0, y1) for x in (x0, x1)]
quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
with open(f, "w") as out:
    out.write("solid box\n")
    for a, b, cc, d in quads:
        for t in ((a, b, cc), (a, cc, d)):
            out.write("facet normal 0 0 0\nouter loop\n")
            for v in t:
                out.write("vertex %r %r %r\n" % c[v])
            out.write("endloop\nendfacet\n")
    out.write("endsolid box\n")
PY
}

# A 10 x 4 x 4 mm part at (100, 50, 0); a 2 mm solid block at its x+ end and
# beyond it; a void block in its middle.
stl_box part.stl 100 50 0 110 54 4
stl_box solid_ascii.stl 108 50 0 112 54 4
"$PY" - <<'PY'
import struct
# the solid block as a binary STL whose 80-byte header starts with "solid"
tris = []
lines = open("solid_ascii.stl").read().split("\n")
vs = [tuple(map(float, l.split()[1:])) for l in lines if l.startswith("vertex")]
with open("solid.stl", "wb") as f:
    f.write(b"solid exported by a CAD tool".ljust(80, b" "))
    f.write(struct.pack("<I", len(vs) // 3))
    for i in range(0, len(vs), 3):
        f.write(struct.pack("<3f", 0, 0, 0))
        for v in vs[i:i + 3]:
            f.write(struct.pack("<3f", *v))
        f.write(b"\0\0")
# the void block as an OBJ
c = [(x, y, z) for z in (1, 3) for y in (51, 53) for x in (103, 106)]
quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
with open("void.obj", "w") as f:
    for v in c:
        f.write("v %r %r %r\n" % v)
    for q in quads:
        f.write("f %d %d %d %d\n" % tuple(i + 1 for i in q))
PY
rm solid_ascii.stl
cat >problem.yaml <<'EOF'
voxfe-problem: 1
material: {E: 1, nu: 0.3}
supports:  # with padding, the faces of the grid lie in the empty margin
  - {name: wall, region: {box: {min: [-.inf, -.inf, -.inf], max: [100, .inf, .inf]}}, fix: [x, y, z]}
loads:
  - {name: tip, region: {box: {min: [112, -.inf, -.inf], max: [.inf, .inf, .inf]}}, force: [0, 0, -1]}
EOF

"$VOXELIZE" --mesh part.stl --solid-mesh solid.stl --void-mesh void.obj --voxel-size 0.5 \
  --padding 2 -p problem.yaml -o model.nc >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 0 ] || fail "exit status $status: $(cat "$LOG/err")"
[ -s "$LOG/out" ] && fail "printed on stdout: $(cat "$LOG/out")"
[ -s "$LOG/err" ] && fail "printed on stderr: $(cat "$LOG/err")"
if [ -f model.nc ]; then
  "$PY" - >"$LOG/check" 2>&1 <<'PY' || fail "model check: $(cat "$LOG/check")"
import numpy as np, netCDF4
d = netCDF4.Dataset("model.nc")
label = np.asarray(d["label"][:])
h, o = list(d.voxel_size), list(d.origin)
# the grid: the part and the solid block (100..112 x 50..54 x 0..4) plus 2 voxels
assert h == [0.5] * 3, h
assert o == [99.0, 49.0, -1.0], o
assert label.shape == (8 + 4, 8 + 4, 24 + 4), label.shape
counts = np.bincount(label.ravel(), minlength=4)
# design 10x4x4 mm minus the 3x2x2 void = 148 mm^3 -> 1184 voxels, but the
# solid block takes 2x4x4 of it, and adds 2x4x4 beyond: 64 + 64 voxels
want = {1: (160 - 12 - 32) * 8, 2: 64 * 8, 3: 12 * 8}
for l, n in want.items():
    assert counts[l] == n, (l, counts[l], n)
# the design voxels are the part's: centres x in (100, 108), y in (50, 54)
k, j, i = np.nonzero(label == 2)
x = o[0] + (i + 0.5) * h[0]
assert x.min() > 108 and x.max() < 112
print("labels", counts)
PY
  ncdump -h model.nc | grep -q -- "--mesh part.stl" || fail "history lacks the command line"
fi

# On a terminal (script(1) gives it one) the stages show on one status line,
# each rewriting it in place ("\r" then the stage: the terminal's own newlines
# come as "\r\n"), the line ended before the program ends; --quiet: no line.
# (The piped run above printed nothing on stderr.)
script -qec "'$VOXELIZE' --mesh part.stl --solid-mesh solid.stl --voxel-size 0.5 --padding 2 \
  -p problem.yaml -o tty.nc" /dev/null >"$LOG/tty" 2>&1 </dev/null ||
  fail "on a terminal: $(cat "$LOG/tty")"
for stage in "read part.stl: 12 triangles" "read solid.stl: 12 triangles" \
  "filled part.stl: [0-9]+ voxels inside \(parity, CPU\)" "filled solid.stl"; do
  grep -qE $'\r'"$stage" "$LOG/tty" ||
    fail "on a terminal: no live line '$stage' in: $(cat -A "$LOG/tty")"
done
[ "$(tail -c 1 "$LOG/tty" | od -An -c | tr -d ' ')" = '\n' ] ||
  fail "on a terminal: the status line is not ended: $(tail -c 20 "$LOG/tty" | od -c)"
script -qec "'$VOXELIZE' -q --mesh part.stl --solid-mesh solid.stl --voxel-size 0.5 --padding 2 \
  -p problem.yaml -o quiet.nc" /dev/null >"$LOG/tty" 2>&1 </dev/null ||
  fail "--quiet on a terminal: $(cat "$LOG/tty")"
[ -s "$LOG/tty" ] && fail "--quiet on a terminal printed: $(cat -A "$LOG/tty")"
rm -f tty.nc quiet.nc

# the same part by resolution: 20 voxels along its longest side (10 mm); no
# padding by default, so the faces of the problem file are the part's
"$VOXELIZE" --mesh part.stl --resolution 20 -p "$CANTILEVER" -o res.nc \
  2>"$LOG/err" || fail "--resolution: $(cat "$LOG/err")"
ncdump -h res.nc | grep -qE "x = 20 ;" || fail "--resolution 20: x is not 20"
ncdump -h res.nc | grep -qE ":origin = 100\.?, 50\.?, 0\.? ;" ||
  fail "--resolution: origin not (100, 50, 0): $(ncdump -h res.nc | grep :origin)"

# the part as 3MF (a zip of XML, as slicers and CAD tools write it): the same
# voxels as from the STL
"$PY" - <<'PY'
import zipfile
c = [(x, y, z) for z in (0, 4) for y in (50, 54) for x in (100, 110)]
quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
tris = [t for a, b, cc, d in quads for t in ((a, b, cc), (a, cc, d))]
core = "http://schemas.microsoft.com/3dmanufacturing/core/2015/02"
model = ['<?xml version="1.0" encoding="UTF-8"?>',
         '<model unit="millimeter" xmlns="%s"><resources><object id="1" type="model"><mesh>' % core,
         "<vertices>"] + ['<vertex x="%g" y="%g" z="%g"/>' % v for v in c] + \
        ["</vertices><triangles>"] + \
        ['<triangle v1="%d" v2="%d" v3="%d"/>' % t for t in tris] + \
        ['</triangles></mesh></object></resources><build><item objectid="1"/></build></model>']
types = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
         'package/2006/content-types"><Default Extension="rels" ContentType="application/'
         'vnd.openxmlformats-package.relationships+xml"/><Default Extension="model" ContentType='
         '"application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/></Types>')
rels = ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
        '.org/package/2006/relationships"><Relationship Target="/3D/3dmodel.model" Id="rel0" '
        'Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>')
with zipfile.ZipFile("part.3mf", "w") as z:
    z.writestr("[Content_Types].xml", types)
    z.writestr("_rels/.rels", rels)
    z.writestr("3D/3dmodel.model", "\n".join(model))
PY
"$VOXELIZE" --mesh part.3mf --resolution 20 -p "$CANTILEVER" -o part3mf.nc \
  2>"$LOG/err" || fail "3MF: $(cat "$LOG/err")"
if [ -f part3mf.nc ] && [ -f res.nc ]; then
  "$PY" - >"$LOG/check" 2>&1 <<'PY' || fail "3MF check: $(cat "$LOG/check")"
import numpy as np, netCDF4
a, b = netCDF4.Dataset("part3mf.nc"), netCDF4.Dataset("res.nc")
assert list(a.origin) == list(b.origin), (a.origin, b.origin)
la, lb = np.asarray(a["label"][:]), np.asarray(b["label"][:])
assert la.shape == lb.shape and (la == lb).all() and (la == 1).sum() == 20 * 8 * 8
PY
fi
rm -f model.nc res.nc part3mf.nc

# an open mesh (the part without its x+ face, two facets): filled by the vote, with
# one note on stderr, and the same voxels as the closed part
head -n $((1 + 7 * 10)) part.stl >open.stl && echo "endsolid box" >>open.stl
"$VOXELIZE" --mesh open.stl --resolution 20 -p "$CANTILEVER" -o open.nc 2>"$LOG/err" ||
  fail "open mesh: $(cat "$LOG/err")"
[ "$(wc -l <"$LOG/err")" -eq 1 ] && grep -q "note: open.stl is not closed (4 edges.*vote" "$LOG/err" ||
  fail "open mesh: expected one note, got: $(cat "$LOG/err")"
"$VOXELIZE" --mesh part.stl --resolution 20 -p "$CANTILEVER" -o closed.nc 2>"$LOG/err" ||
  fail "closed mesh: $(cat "$LOG/err")"
[ -s "$LOG/err" ] && fail "closed mesh: printed on stderr: $(cat "$LOG/err")"
if [ -f open.nc ] && [ -f closed.nc ]; then
  "$PY" -c '
import numpy as np, netCDF4
a, b = (np.asarray(netCDF4.Dataset(f)["label"][:]) for f in ("open.nc", "closed.nc"))
assert a.shape == b.shape and (a == b).all(), "the open mesh gave other voxels"
' 2>"$LOG/check" || fail "open mesh: $(cat "$LOG/check")"
fi
rm -f open.nc closed.nc

# ---- bad input --------------------------------------------------------------
: >empty.stl
printf 'this is not a mesh\n' >garbage.stl
mkdir folder.stl
"$PY" - <<'PY'
import struct
with open("nan.stl", "wb") as f:   # binary STL, one vertex NaN
    f.write(b"binary".ljust(80, b" ") + struct.pack("<I", 1))
    f.write(struct.pack("<12f", 0, 0, 1, 0, 0, 0, 1, 0, 0, float("nan"), 1, 0) + b"\0\0")
with open("lines.obj", "w") as f:  # only a polyline: no triangle
    f.write("v 0 0 0\nv 1 0 0\nv 1 1 0\nl 1 2 3\n")
with open("flat.obj", "w") as f:   # one triangle: no volume to fill
    f.write("v 0 0 0\nv 1 0 0\nv 0 1 0.5\nf 1 2 3\n")
PY
expect_usage_error "missing mesh" "nothere\.stl: cannot open" \
  "$VOXELIZE" --mesh nothere.stl --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "empty mesh" "empty\.stl: empty file" \
  "$VOXELIZE" --mesh empty.stl --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "not a mesh" "garbage\.stl: " \
  "$VOXELIZE" --mesh garbage.stl --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "a folder" "folder\.stl: not a regular file" \
  "$VOXELIZE" --mesh folder.stl --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "NaN coordinate" "nan\.stl: .*not a finite number" \
  "$VOXELIZE" --mesh nan.stl --resolution 10 -p problem.yaml -o out.nc
head -c 300 solid.stl >truncated.stl
expect_usage_error "truncated binary STL" "truncated\.stl: not a mesh assimp can read" \
  "$VOXELIZE" --mesh truncated.stl --resolution 10 -p problem.yaml -o out.nc
# a face line broken by a control character: assimp 5.2's OFF loader makes a
# face without indices, on which its Triangulate asserted and aborted; its
# validation refuses it first (tests/fuzz/fuzz_mesh.c found it)
printf 'OFF\n4 4 0\n0 0 0\0322 0 0\n0 2 0\n0 0 2\n3 0 2 1\n3 0 1 3\n3 1 2 3\n3 0 3 2\n' >ctrl.off
expect_usage_error "OFF line with a control character" "ctrl\.off: not a mesh assimp can read" \
  "$VOXELIZE" --mesh ctrl.off --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "no triangle" "lines\.obj: " \
  "$VOXELIZE" --mesh lines.obj --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "no volume" "flat\.obj: no voxel centre lies inside" \
  "$VOXELIZE" --mesh flat.obj --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "bad passive mesh" "garbage\.stl: " \
  "$VOXELIZE" --mesh part.stl --void-mesh garbage.stl --resolution 10 -p problem.yaml -o out.nc
expect_usage_error "no grid size" "one of --voxel-size H and --resolution N" \
  "$VOXELIZE" --mesh part.stl -p problem.yaml -o out.nc
expect_usage_error "origin with a mesh" "--origin is for --box" \
  "$VOXELIZE" --mesh part.stl --resolution 10 --origin 0,0,0 -p problem.yaml -o out.nc
expect_usage_error "passive mesh alone" "go with --mesh" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 1 --solid-mesh part.stl -p problem.yaml -o out.nc
expect_usage_error "bad fill rule" "expected auto, parity or vote" \
  "$VOXELIZE" --mesh part.stl --resolution 10 --fill odd -p problem.yaml -o out.nc
expect_usage_error "mesh is the output" "refusing to overwrite an input" \
  "$VOXELIZE" --mesh part.stl --resolution 10 -p problem.yaml -o part.stl
finish
