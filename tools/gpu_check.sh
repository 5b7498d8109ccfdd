#!/bin/bash
# Everything this project checks on a GPU, in one call on a machine lent for minutes: the native
# GPU suite, the op benchmark and the step benchmark against PyTorch (fp32, TF32, bf16; DINOv2's
# ViT-B/14 in bf16), a two-epoch run on a CUB-sized synthetic layout in fp32 and bf16 (train +
# eval + checkpoint), the CLS features of real photos in each precision against fp32, and the demo's SimGCD in fp32
# and bf16 (Fashion-MNIST's idx files carried in .gpu/fmnist), and compute-sanitizer's four tools
# over the native GPU suite (time-bounded subsets, see the sanitize stage); last, the verdicts of
# docs/performance.md's written rules and the targets (tools/gpu_verdicts.sh). Runs the binaries of
# tools/gpu_bundle.sh (.gpu/bundle.tar.xz) from the repository root; writes report.txt (each
# stage's tail and time, the verdicts) and logs/<stage>.log (each stage's whole log, written as it
# runs, so that a call cut off at its limit still brings back the stages it finished and how far
# the cut one got) into $OUT (default ./gpu_report).
#
#   tools/gpu_check.sh [STAGE...]    stages: test bench step epoch fidelity demo demo-jobs mpi pairs sanitize
#                                    (default: all, in this order: a call cut off at its bound loses the last)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_report}
mkdir -p "$OUT"
REPORT="$OUT/report.txt"
STAGES=${*:-test bench step epoch fidelity demo demo-jobs mpi pairs sanitize}
LOGS="$OUT/logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"

if [ -f .gpu/bundle.tar.xz ] && [ ! -x build/bench_step ]; then
  tar -xJf .gpu/bundle.tar.xz -C .
fi
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1

say() { echo "$*" | tee -a "$REPORT"; }
# stage NAME COMMAND...: runs it with its log in $LOGS, its tail and time in the report.
stage() {
  local name=$1 start=$SECONDS
  shift
  say "== $name: $*"
  "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$LOGS/$name.log" | tee -a "$REPORT"
  say "-- $name: exit $rc, $((SECONDS - start)) s"
}
wants() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

# find_library FILE: the loader's copy of a library, else the CUDA toolkit's or pip's (PyTorch's
# nvidia-* wheels: nvidia/<package>/lib/FILE); prints its path, and "loader" first for the loader's.
find_library() {
  local file=$1 found
  found=$(ldconfig -p | awk -v name="$file" '$1 == name {print $NF; exit}')
  if [ -n "$found" ]; then echo "loader $found"; return; fi
  (ls /usr/local/cuda*/lib64/"$file" /usr/local/cuda*/targets/x86_64-linux/lib/"$file" \
    /usr/lib/x86_64-linux-gnu/"$file" 2>/dev/null
    python3 -c "import glob, os, nvidia; print(*[f for p in nvidia.__path__ for f in glob.glob(os.path.join(p, '*', 'lib', '$file'))], sep='\n')" \
      2>/dev/null) | head -1
}
# locate_library VARIABLE FILE: a library loaded at run time, where the loader does not find it:
# its path exported in VARIABLE (the engine's MCDL_CUDNN_LIBRARY, MCDL_NCCL_LIBRARY), or with
# VARIABLE = LD_LIBRARY_PATH its folder put first there (a library opened by name by another).
locate_library() {
  local variable=$1 file=$2 found
  [ "$variable" != LD_LIBRARY_PATH ] && [ -n "${!variable:-}" ] && return
  found=$(find_library "$file")
  case "$found" in
    loader\ *) say "$file: on the loader's path (${found#loader })" ;;
    ?*)
      if [ "$variable" = LD_LIBRARY_PATH ]; then
        export LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      else
        export "$variable=$found"
      fi
      say "$file: $found (through $variable)" ;;
    *) say "$file: not found" ;;
  esac
}
# cuDNN for the cudnn attention and GELU (bench_gpu's [cudnn] rows, the GPU suite's cuDNN tests).
locate_library MCDL_CUDNN_LIBRARY libcudnn.so.9
# cuDNN's fused engines compile their kernels when a plan is built, with NVRTC, opened by name.
locate_library LD_LIBRARY_PATH libnvrtc.so.13

say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
say "$(python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1)"

# The GPU suite first: the written rules change no default unless it passed whole in the same
# call, so a call cut off at its bound must not lose it. It runs with cuDNN's warnings logged
# (only what it refuses: the full log runs to megabytes); cudnn-reasons counts its reasons. On
# the H200 of 2026-11-29 its attention was refused in its MHA pattern match.
# The wgmma cases first, in a process of their own: that kernel's first run on the hardware, where a
# fault would end the process and fail every later case of the suite for it.
wants test && stage test-wgmma build/mcdl_tests_gpu -tc='*wgmma*'
wants test && stage test env CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=/tmp/cudnn-warnings.log build/mcdl_tests_gpu \
  -tce='*wgmma*'
cudnn_reasons() {
  [ -f /tmp/cudnn-warnings.log ] || { echo "cuDNN logged no warning"; return 0; }
  grep -E "Reason:|No viable" /tmp/cudnn-warnings.log | sed 's/^[a-zA-Z]! *//' | sort | uniq -c | sort -rn | head -20
}
wants test && stage cudnn-reasons cudnn_reasons
if wants bench; then
  python3 tools/bench_torch_gpu.py > "$LOGS/torch_gpu_times.tsv" 2> /dev/null
  stage bench build/bench_gpu "$LOGS/torch_gpu_times.tsv"
fi
wants step && stage step python3 tools/bench_torch_step.py --device cuda --batch 128 --engine build/bench_step
# DINOv2's ViT-B/14 (256 patches + CLS, LayerScale) in bf16 against eager PyTorch, beside ViT-B/16's
# eager ratios above (no torch.compile column: its compile time would not fit the call); with
# registers for the forward alone.
wants step && stage step-dinov2 python3 tools/bench_torch_step.py --device cuda --batch 128 --engine build/bench_step \
  --model vit_base_patch14_dinov2 --precisions bf16 --compile none
# The frozen blocks' forward as CUDA graphs against eager, the engine alone in bf16, alternated
# twice (docs/performance.md, "CUDA graphs of the frozen blocks": the rule that decides the default).
step_graphs() {
  for round in 1 2; do
    for graphs in off frozen; do
      build/bench_step --device cuda --precision bf16 --batch 128 --cuda-graphs "$graphs" 2>&1 |
        sed "s/^/round $round, graphs $graphs: /"
    done
  done
}
wants step && stage step-graphs step_graphs
wants step && stage step-dinov2-reg4 python3 tools/bench_torch_step.py --device cuda --batch 128 \
  --engine build/bench_step --model vit_base_patch14_dinov2_reg4 --precisions bf16 --workloads forward --compile none
# The bf16 steps with the flash, wgmma and cudnn attentions, the engine alone (ViT-B/16, and
# DINOv2's ViT-B/14 for its steps): beside the step stages' PyTorch columns, the ratios each attention
# would give as the default, so that one call shows the targets under the attention rule's pick.
# Then cuDNN's attention with the tanh and the cuDNN GELU (ViT-B/16 only), the rules' likely
# picks together: labels "cudnn+tanh-gelu" and "cudnn+cudnn-gelu".
step_attention() {
  for config in flash wgmma cudnn cudnn+tanh-gelu cudnn+cudnn-gelu; do
    local attention=${config%%+*} gelu="" models="vit_base_patch16 vit_base_patch14_dinov2"
    if [ "$config" != "$attention" ]; then
      gelu=${config#*+} gelu=${gelu%-gelu} models=vit_base_patch16
    fi
    for model in $models; do
      local workloads=forward,simgcd,mcdl
      [ "$model" = vit_base_patch16 ] || workloads=simgcd,mcdl
      MCDL_ATTENTION=$attention MCDL_BF16_GELU=$gelu build/bench_step --device cuda --model "$model" --precision bf16 \
        --batch 128 --workloads "$workloads" 2>&1 | sed "s/^/attention $config, $model: /"
    done
  done
}
wants step && stage step-attention step_attention

# epoch_run PRECISION [ATTENTION] [GRAPHS]: two epochs of SimGCD + MCDL on ViT-B/16 (random
# weights), the frozen blocks' attention MCDL_ATTENTION's (default: the engine's; cudnn also takes
# fc1's GELU from cuDNN, MCDL_BF16_GELU=cudnn: every cuDNN path, its plans' compiles in the first
# epoch), their forward as CUDA graphs with GRAPHS = frozen (MCDL_CUDA_GRAPHS). The epoch scores the
# unlabelled images only, the workload the performance issue defines and earlier reports timed
# (the test split would add an evaluation of its 5,794 images).
epoch_run() {
  local run="/tmp/run-$1${2:+-$2}${3:+-graphs-$3}" gelu=""
  [ "${2:-}" = cudnn ] && gelu=cudnn
  MCDL_ATTENTION=${2:-} MCDL_BF16_GELU=$gelu MCDL_CUDA_GRAPHS=${3:-} ./mcdl_train cub --data-root /tmp/cub --model vit_base_patch16 --epochs 2 --batch-size 128 \
    --precision "$1" --progress false --eval-on unlabelled --out "$run" &&
    for column in train_seconds eval_seconds eval_features_seconds eval_cluster_seconds eval_report_seconds seconds; do
      echo "$column per epoch ($1${2:+, $2 attention}${gelu:+ and GELU}${3:+, CUDA graphs $3}): $(cut -d, -f"$(head -1 "$run/metrics.csv" | tr , '\n' | grep -n "^$column\$" | cut -d: -f1)" "$run/metrics.csv" | tail -n +2 | tr '\n' ' ')"
    done &&
    du -sh "$run/checkpoints"
}
if wants epoch; then
  [ -d /tmp/cub ] || stage synthetic-cub python3 tools/make_synthetic_cub.py /tmp/cub
  for precision in fp32 bf16; do stage "epoch-$precision" epoch_run "$precision"; done
  stage epoch-bf16-cudnn epoch_run bf16 cudnn
  stage epoch-bf16-wgmma epoch_run bf16 wgmma
  stage epoch-bf16-graphs epoch_run bf16 "" frozen
fi

if wants fidelity && [ -d /tmp/run-fp32 ]; then
  stage photos python3 -c '
import os, skimage.data as d
from PIL import Image
os.makedirs("/tmp/photos", exist_ok=True)
for name in ("astronaut", "coffee", "chelsea", "rocket", "retina", "immunohistochemistry", "hubble_deep_field"):
    try: Image.fromarray(getattr(d, name)()).convert("RGB").save(f"/tmp/photos/{name}.png")
    except Exception as e: print(name, "unavailable:", e)
print(sorted(os.listdir("/tmp/photos")))'
  for precision in fp32 tf32 bf16; do
    stage "features-$precision" ./mcdl_features --checkpoint /tmp/run-fp32 /tmp/photos --raw \
      --precision "$precision" -o "/tmp/features-$precision.npy"
  done
  for attention in flash wgmma cudnn; do
    MCDL_ATTENTION=$attention stage "features-bf16-$attention" ./mcdl_features --checkpoint /tmp/run-fp32 /tmp/photos \
      --raw --precision bf16 -o "/tmp/features-bf16-$attention.npy"
  done
  for gelu in tanh cudnn; do
    MCDL_BF16_GELU=$gelu stage "features-bf16-$gelu-gelu" ./mcdl_features --checkpoint /tmp/run-fp32 /tmp/photos --raw \
      --precision bf16 -o "/tmp/features-bf16-$gelu-gelu.npy"
  done
  stage fidelity python3 -c '
import os, numpy as np
ref = np.load("/tmp/features-fp32.npy")
for p in ("tf32", "bf16", "bf16-flash", "bf16-wgmma", "bf16-cudnn", "bf16-tanh-gelu", "bf16-cudnn-gelu"):
    if not os.path.exists(f"/tmp/features-{p}.npy"):
        print(f"{p}: no features (see its stage)")
        continue
    f = np.load(f"/tmp/features-{p}.npy")
    cos = (ref * f).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(f, axis=1)
    print(f"{p}: CLS cosine to fp32 over {len(cos)} photos: min {cos.min():.6f}, mean {cos.mean():.6f}")'
fi
if wants demo; then
  for precision in fp32 bf16; do
    stage "demo-$precision" env DATA_ROOT=.gpu/fmnist SEEDS="1 2" DEMO_JOBS=2 METHODS=simgcd PRECISION="$precision" \
      DEMO_OUT="/tmp/demo-$precision" tools/demo.sh
  done
fi
# How many of the demo's small runs the GPU sustains side by side (make demo runs one at a time on a
# GPU): four SimGCD seeds one at a time and all four at once, each way's wall time, and whether the
# table is the same both ways (it must be: each run is a process of its own, and its kernels give
# the same bits whatever runs beside them).
# Then four at once again with the frozen blocks as CUDA graphs (MCDL_CUDA_GRAPHS=frozen), whose
# table must be the same too (the graphs replay the eager bits).
demo_jobs() {
  for way in 1 4 4-graphs; do
    local start=$SECONDS jobs=${way%%-*} graphs=off
    [ "$way" = 4-graphs ] && graphs=frozen
    MCDL_CUDA_GRAPHS=$graphs DATA_ROOT=.gpu/fmnist SEEDS="1 2 3 4" DEMO_JOBS=$jobs METHODS=simgcd \
      DEMO_OUT="/tmp/demo-jobs-$way" tools/demo.sh > "/tmp/demo-jobs-$way.txt" 2>&1 ||
      { cat "/tmp/demo-jobs-$way.txt"; return 1; }
    echo "DEMO_JOBS=$jobs, CUDA graphs $graphs: $((SECONDS - start)) s for 4 SimGCD runs"
    sed -n '/in all\./,$p' "/tmp/demo-jobs-$way.txt" | tail -n +2 > "/tmp/demo-jobs-$way.table"
  done
  cat /tmp/demo-jobs-1.table
  for way in 4 4-graphs; do
    cmp -s /tmp/demo-jobs-1.table "/tmp/demo-jobs-$way.table" && echo "table with $way: the same" ||
      echo "table with $way: DIFFERENT"
  done
}
wants demo-jobs && stage demo-jobs demo_jobs
# Two processes on the GPU (mpirun, the bundled MPI plugin) against one process with the same
# --shards: a short SimGCD + MCDL run on fmnist-pairs, the GPU data between the processes through
# host memory (--gpu-collectives host), then through NCCL (nccl; NCCL may refuse two ranks on one
# GPU, and the log then says so); each compared with the one-process run: whether the metrics
# (timing columns aside), predictions and checkpoint tensors are the same bytes, or how far apart.
same_run() {
  python3 -c '
import csv, json, struct, sys
def rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in csv.DictReader(f)]
def tensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n]); header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
a, b = sys.argv[1:3]
print(b, "against", a)
print("metrics same:", rows(a + "/metrics.csv") == rows(b + "/metrics.csv"))
print("predictions same:", open(a + "/predictions.csv").read() == open(b + "/predictions.csv").read())
ta, tb = tensors(a + "/checkpoints/last.safetensors"), tensors(b + "/checkpoints/last.safetensors")
differ = [k for k in ta if ta[k] != tb.get(k)]
print("checkpoint tensors:", len(ta), "differing:", len(differ), differ[:5])
sys.exit(0 if not differ else 1)' "$1" "$2"
}
mpi_runs() {
  local common="fmnist-pairs --data-root .gpu/fmnist --model img=56,patch=14,dim=64,depth=2,heads=2,chans=1
    --image-size 56 --max-train 1200 --epochs 2 --batch-size 64 --shards 2 --mu 1 --mcdl-start 0
    --warmup-teacher-epochs 1 --device cuda --progress false --grad-from-block 0"
  locate_library MCDL_NCCL_LIBRARY libnccl.so.2
  export MCDL_NCCL_LIBRARY=${MCDL_NCCL_LIBRARY:-}  # set, even if empty, for mpirun -x
  rm -rf /tmp/mpi-1 /tmp/mpi-host /tmp/mpi-nccl
  local status=0
  # shellcheck disable=SC2086
  ./mcdl_train $common --out /tmp/mpi-1 || return 1
  for transport in host nccl; do
    # shellcheck disable=SC2086
    timeout 200 mpirun --allow-run-as-root -x MCDL_NCCL_LIBRARY -np 2 ./mcdl_train $common --gpu-collectives "$transport" \
      --out "/tmp/mpi-$transport" && same_run /tmp/mpi-1 "/tmp/mpi-$transport" || status=1
  done
  return $status
}
if wants mpi; then
  stage mpi mpi_runs
fi
# The CUB-like benchmark in under 5 minutes: make demo DATASET=fmnist-pairs (3 seeds, its four
# rows) on the GPU while the CPU cores run its validation study beside it (seeds 1-5 of SimGCD,
# robust and robust with the class cap, one single-threaded run per core), each bounded.
if wants pairs; then
  cores=$(nproc)
  DATA_ROOT=.gpu/fmnist STUDY_DATASET=fmnist-pairs STUDY_PROTOCOLS=validation STUDY_CONFIGS="simgcd robust robust-class-cap" \
    STUDY_JOBS=$((cores > 3 ? cores - 2 : 1)) STUDY_OUT=/tmp/study-pairs timeout 290 tools/study.sh \
    > "$LOGS/pairs-study.log" 2>&1 &
  study=$!
  stage pairs-demo env DATA_ROOT=.gpu/fmnist DATASET=fmnist-pairs SEEDS="1 2 3" DEMO_OUT=/tmp/demo-pairs \
    timeout 290 tools/demo.sh
  wait "$study"; say "== pairs-study (CPU, exit $?):"; tail -n 20 "$LOGS/pairs-study.log" | tee -a "$REPORT"
fi
# compute-sanitizer (found by tools/gpu_sanitize.sh: PATH, else $CUDA_HOME/bin, default
# /usr/local/cuda) on the bundled build/mcdl_tests_gpu; any error fails its stage. On an H200
# (2026-11-29) the stages from step to demo took about 9 minutes, so one 10-minute call does not
# reach these: give them a call of their own (tools/gpu_check.sh sanitize), about 4 minutes:
# memcheck with the leak check over every case but the training runs and the loader (2 min), then
# racecheck, initcheck and synccheck (40 s each) over the kernels with shared memory and barriers
# (reductions, softmax, LayerNorm, the losses, the memory banks and buckets, the mask scan, bf16
# attention). A stage cut short by its bound says so (exit 124).
SHARED_MEMORY_CASES='cuda reduce*,cuda nn*,cuda loss*,memory bank*,credibility*,cuda parity: masked*,cuda parity: bf16*,dcl loss: the same*,simgcd loss: the same*'
if wants sanitize; then
  stage sanitize-memcheck tools/gpu_sanitize.sh -t 120 build/mcdl_tests_gpu memcheck --test-suite-exclude=slow \
    '--test-case-exclude=e2e*,crash safety*,evaluator*,loader*,sampler*,image cache*'
  for tool in racecheck initcheck synccheck; do
    stage "sanitize-$tool" tools/gpu_sanitize.sh -t 40 build/mcdl_tests_gpu "$tool" --test-suite-exclude=slow \
      "--test-case=$SHARED_MEMORY_CASES"
  done
fi
# The written rules' verdicts and the targets, from this call's logs (tools/gpu_verdicts.sh; it
# also runs on the logs of a call that was cut off: tools/gpu_verdicts.sh $OUT/logs).
tools/gpu_verdicts.sh "$LOGS" | tee -a "$REPORT"
say "== done"
