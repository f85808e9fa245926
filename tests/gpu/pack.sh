#!/usr/bin/env bash
# Packs what tests/gpu/run.sh needs on a GPU machine that lacks dtlab's Debian -dev packages
# (the `device` machine's image has CUDA, cuBLAS, NCCL and PyTorch, not fmt/OpenBLAS/GTest):
# dtlab and the gpu test programs from build/gpu, and the shared libraries they load that
# are not CUDA's own. Run it after building the gpu preset (MPI off: no Open MPI to carry):
#
#   cmake --preset gpu -DDTL_WITH_MPI=OFF && cmake --build --preset gpu -j2 --target dtlab \
#     cuda_kernels_test cuda_transformer_test cuda_device_ops_test cuda_model_test nccl_comm_test
#   bash tests/gpu/pack.sh .gpubin && DTL_GPU_PREBUILT=.gpubin bash tests/gpu/run.sh   # there
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-.gpubin}
rm -rf "$dest"; mkdir -p "$dest/lib"
cp build/gpu/labs/cli/dtlab "$dest/"
for t in cuda_kernels_test cuda_transformer_test cuda_device_ops_test cuda_model_test nccl_comm_test; do
  [ -x "build/gpu/tests/$t" ] && cp "build/gpu/tests/$t" "$dest/"
done
# Libraries outside glibc, libstdc++ and CUDA's prefix (the GPU machine brings those).
ldd "$dest"/dtlab "$dest"/*_test | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/usr/local/cuda|/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$dest/lib/"; done
strip "$dest"/dtlab "$dest"/*_test 2>/dev/null || true
du -sh "$dest"; ls "$dest/lib"
