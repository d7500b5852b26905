#!/bin/sh
# install.sh (copied into .wheels/ by trl_grpo_prepare.sh): installs, with
# no package index, the wheels beside it that PYTHON lacks for TRL's
# GRPOTrainer into TARGET, for PYTHONPATH=TARGET. Usage:
#
#   .wheels/install.sh [TARGET] [PYTHON]     # defaults /tmp/pylib python3
#
# Always trl; accelerate if missing or older than trl needs; pandas (and
# python-dateutil, six, tzdata), psutil, pyyaml if missing; datasets with
# dill, multiprocess, xxhash, fsspec only where pyarrow (>= 21) is there and
# datasets is missing or old: without pyarrow, trl_grpo.py uses its
# stand-ins (integrations/examples/trl_stubs/). With pip it runs
# `pip install --no-index --no-deps --find-links DIR --target TARGET`; a
# Python without pip gets the wheels unpacked (a wheel is a zip laid out
# for site-packages). Prints what it installed and what PYTHON still lacks;
# exits 1 when a package the run needs is missing.
set -eu
D=$(cd "$(dirname "$0")" && pwd)
T=${1:-/tmp/pylib}
PY=${2:-python3}
mkdir -p "$T"
"$PY" - "$D" "$T" <<'EOF'
import glob, importlib.metadata as md, os, subprocess, sys, zipfile
D, T = sys.argv[1], sys.argv[2]
try:
    from packaging.version import Version
except ImportError:
    Version = None


def have(dist):
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def older(v, least):
    if v is None:
        return True
    if Version is None:
        return False
    try:
        return Version(v) < Version(least)
    except Exception:
        return False


def wheel(dist):
    key = dist.replace("-", "_").lower()
    got = [w for w in glob.glob(os.path.join(D, "*.whl"))
           if os.path.basename(w).lower().split("-")[0] == key]
    if not got:
        sys.exit(f"install.sh: no wheel for {dist} in {D}")
    return sorted(got)[-1]


want, notes = ["trl"], []
if older(have("accelerate"), "1.10.1"):
    want.append("accelerate")
if have("pandas") is None:
    want.append("pandas")
    want += [d for d in ("python-dateutil", "six", "tzdata")
             if have(d) is None]
for d in ("psutil", "pyyaml"):
    if have(d) is None:
        want.append(d)
if not older(have("pyarrow"), "21.0.0"):
    if older(have("datasets"), "4.7.0"):
        want += ["datasets", "dill", "multiprocess", "xxhash", "fsspec"]
else:
    notes.append("pyarrow %s: datasets and pyarrow come from trl_grpo.py's "
                 "stand-ins (integrations/examples/trl_stubs)"
                 % (have("pyarrow") or "missing"))
files = [wheel(d) for d in want]
pip_ok = subprocess.run([sys.executable, "-m", "pip", "--version"],
                        capture_output=True).returncode == 0
if pip_ok:
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
           "--upgrade", "--find-links", D, "--target", T] + files
    print("install.sh:", " ".join(cmd[2:6] + ["..."]), flush=True)
    subprocess.run(cmd, check=True)
else:
    print("install.sh: this Python has no pip: unpacking the wheels into",
          T, flush=True)
    for f in files:
        with zipfile.ZipFile(f) as z:
            z.extractall(T)
print("install.sh: installed into %s:" % T)
for f in files:
    print("  " + os.path.basename(f))
for n in notes:
    print("install.sh: note:", n)
# What the run needs from PYTHON itself (not shipped here).
need = {"torch": "2.6.0", "transformers": "4.56.2", "numpy": "1.26.0",
        "huggingface-hub": "0.34.0", "tokenizers": None, "safetensors": None,
        "jinja2": None, "packaging": None}
bad = []
for d, least in need.items():
    v = have(d)
    if v is None or (least and older(v, least)):
        bad.append(f"{d} {v or 'missing'} (needs >= {least or 'any'})")
print("install.sh: the Python's own:", ", ".join(
    f"{d} {have(d)}" for d in need))
if bad:
    print("install.sh: MISSING for the run:", "; ".join(bad))
    sys.exit(1)
EOF
echo "install.sh: now: PYTHONPATH=$T $PY integrations/examples/trl_grpo.py ..."
