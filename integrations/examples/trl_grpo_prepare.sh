#!/bin/sh
# trl_grpo_prepare.sh: readies the working tree for integrations/examples/
# trl_grpo.py on a machine without a package index (the GPU machine), run
# on a machine with one. Usage, from the repository root:
#
#   integrations/examples/trl_grpo_prepare.sh [BUILD] [PYTHON_VERSION]
#
# 1. BUILD/lib/libmicrohttpd.so.12: kforge-serve's HTTP library, which the
#    GPU machine lacks (kforge-serve's rpath is $ORIGIN/lib), and in
#    BUILD/lib/fallback/ the libgnutls it needs with that library's own
#    dependencies, which trl_grpo.py puts on LD_LIBRARY_PATH only where ldd
#    finds them missing.
# 2. .wheels/: the wheels TRL's GRPOTrainer needs beyond torch and
#    transformers, for CPython PYTHON_VERSION (default 3.12) on manylinux
#    x86_64, and .wheels/install.sh (a copy of trl_grpo_install.sh), which
#    installs them offline into a folder for PYTHONPATH. pyarrow (55 MB) is
#    left out: where it and datasets are missing, trl_grpo.py uses the
#    stand-ins of integrations/examples/trl_stubs/.
set -eu
B=${1:-build5}
PYV=${2:-3.12}
HERE=$(cd "$(dirname "$0")" && pwd)
PIP=${PIP:-pip}

[ -x "$B/kforge-serve" ] || { echo "no $B/kforge-serve: make BUILD=$B all" >&2; exit 2; }
libdir=/usr/lib/x86_64-linux-gnu
mkdir -p "$B/lib/fallback"
cp -L "$libdir/libmicrohttpd.so.12" "$B/lib/"
for l in libgnutls.so.30 libp11-kit.so.0 libidn2.so.0 libunistring.so.2 \
	libtasn1.so.6 libnettle.so.8 libhogweed.so.6 libgmp.so.10 libffi.so.8; do
	cp -L "$libdir/$l" "$B/lib/fallback/"
done
echo "$B/lib: $(ls "$B/lib" | tr '\n' ' ')"
echo "$B/lib/fallback: $(ls "$B/lib/fallback" | tr '\n' ' ')"

# The versions the local run used (docs/rl.md, "A GRPO step with TRL").
PKGS="trl==1.16.0 accelerate==1.16.0 datasets==5.2.0 dill==0.4.1
multiprocess==0.70.19 xxhash==4.1.0 fsspec==2026.9.0 pandas==3.1.1
python-dateutil==4.0.0 six==1.17.0 tzdata==2026.6 psutil==7.2.2
pyyaml==6.0.4"
mkdir -p .wheels
# shellcheck disable=SC2086
$PIP download --only-binary=:all: --no-deps --python-version "$PYV" \
	--implementation cp --platform manylinux2014_x86_64 \
	--platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
	-d .wheels $PKGS
cp "$HERE/trl_grpo_install.sh" .wheels/install.sh
chmod +x .wheels/install.sh
ls -la .wheels
du -sh .wheels "$B"
