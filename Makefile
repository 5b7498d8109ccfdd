# MCDL engine. `make` builds everything, `make test` runs the test suite, `make bench` the
# benchmarks. Missing Debian packages are installed by tools/install_deps.sh first.
#
# The CUDA kernels (kernels/cuda/*.cu) build two ways:
#   - with nvcc into build/libmcdl_cuda.a: the product's GPU backend (sm_80, sm_90a: Hopper's
#     own instructions such as wgmma, and compute_90 PTX for newer GPUs), linked into the tools
#     and into build/mcdl_tests_gpu;
#   - with g++ and the CPU emulator (kernels/emu/) into build/libmcdl_cuda_emu.a: linked into
#     build/mcdl_tests, which checks every kernel against the CPU reference without a GPU.
# Without nvcc, the tools link the emulated library, which reports no device: a CPU-only build.
# Parallel by default: one job per core unless the command line gives -j (make -j1 for a serial
# build). A fresh clone's `make test` on 2 cores is otherwise dominated by one-at-a-time nvcc.
# A recursive make (test-asan) shares its parent's job slots instead.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
CXX      ?= g++
BUILD    ?= build
CUDA_HOME ?= /usr/local/cuda
CXXFLAGS ?= -O2 -g
# -O2's vectorizer takes only loops whose trip count is a multiple of the vector width
# (GCC 12's very-cheap cost model); the dynamic model adds remainder loops and runtime alias
# checks, so the host kernels' element-wise loops vectorize too. Without -ffast-math no sum is
# reordered: the same bits (a demo run's predictions and checkpoint compared), 7% faster.
CXXFLAGS += -fvect-cost-model=dynamic
# OpenBLAS's OpenMP build, so that BLAS and the engine's own OpenMP loops share one thread
# pool (with the pthread build, idle OpenMP threads spin against BLAS threads: measured
# 10-30% slower linear layers on 2 cores).
OPENBLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
CXXFLAGS += -std=c++20 -fopenmp -Wall -Wextra -Werror -I. -isystem /usr/include/x86_64-linux-gnu/openblas-openmp -MMD -MP
# oneDNN (Debian's libdnnl, OpenMP runtime) for the host's bf16 products (kernels/cpu/gemm_bf16.h).
LDLIBS   += -L$(OPENBLAS_DIR) -Wl,-rpath,$(OPENBLAS_DIR) -lopenblas -ldnnl -fopenmp -lz
# Instrumentation for g++'s compiles and links only (never nvcc): empty except in `make test-asan`.
SANITIZE ?=
CXXFLAGS += $(SANITIZE)
LDLIBS   += $(SANITIZE)

NVCC := $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
NVCCFLAGS ?= -O3
# ptxas treats a register spill as an error, so the build itself keeps every kernel spill-free.
NVCCFLAGS += -std=c++20 -I. -Werror all-warnings -Xcompiler -Wall,-Wextra -Xptxas --warn-on-spills,--warning-as-error \
             -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a \
             -gencode arch=compute_90,code=compute_90 -MMD -MP
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcublasLt -lcudart_static -ldl -lrt -lpthread

LIB_SRCS  := $(wildcard engine/*.cpp engine/*/*.cpp io/*.cpp kernels/cpu/*.cpp layers/*.cpp data/*.cpp data/*/*.cpp mcdl/*.cpp mcdl/*/*.cpp)
CUDA_SRCS := $(wildcard kernels/cuda/*.cu)
TEST_MAIN_SRCS := $(wildcard tests/main/*.cpp)
# tests/fuzz/ holds the libFuzzer targets (`make fuzz`), built with clang elsewhere.
TEST_SRCS := $(filter-out $(TEST_MAIN_SRCS) tests/fuzz/%,$(wildcard tests/*.cpp tests/*/*.cpp))
# Kernels that exist only to test the emulator itself: built with g++ into mcdl_tests.
TEST_CUDA_SRCS := $(wildcard tests/*/*.cu)
# The native GPU suite: every kernel parity test, plus the method's kernels (memory banks, losses),
# the backbones' PyTorch parity (DINO ViT, DINOv2) and the pipeline (loader views and training runs
# on the device).
GPU_TEST_SRCS := tests/test_main.cpp tests/gradcheck.cpp $(wildcard tests/cuda/*.cpp) \
                 tests/mcdl/test_memory_bank.cpp tests/mcdl/test_dcl_loss.cpp tests/mcdl/test_simgcd_loss.cpp \
                 tests/layers/test_vit_parity.cpp tests/layers/test_dinov2_parity.cpp $(wildcard tests/pipeline/*.cpp)

# Command-line programs: tools/mcdl_<name>.cpp each build ./mcdl_<name> at the repository root;
# code shared by several of them lives in tools/common/.
TOOL_SRCS := $(wildcard tools/mcdl_*.cpp)
MPI_PLUGIN := libmcdl_mpi.so
TOOL_BINS := $(TOOL_SRCS:tools/%.cpp=%)
TOOL_COMMON_SRCS := $(wildcard tools/common/*.cpp)

LIB_OBJS  := $(LIB_SRCS:%.cpp=$(BUILD)/%.o)
EMU_OBJS  := $(CUDA_SRCS:%.cu=$(BUILD)/emu/%.o)
GPU_OBJS  := $(CUDA_SRCS:%.cu=$(BUILD)/gpu/%.o)
TEST_OBJS := $(TEST_SRCS:%.cpp=$(BUILD)/%.o) $(TEST_CUDA_SRCS:%.cu=$(BUILD)/emu/%.o)
LIB       := $(BUILD)/libmcdl.a
EMU_LIB   := $(BUILD)/libmcdl_cuda_emu.a
GPU_LIB   := $(BUILD)/libmcdl_cuda.a
TOOL_LIB  := $(BUILD)/libmcdl_tools.a
TESTS     := $(BUILD)/mcdl_tests
NCCL_EMU  := $(BUILD)/libmcdl_nccl_emu.so
CUDNN_EMU := $(BUILD)/libmcdl_cudnn_emu.so
GPU_TESTS := $(BUILD)/mcdl_tests_gpu
BENCH     := $(BUILD)/bench_linear
# A whole training step (ViT-B/16 + SimGCD, and + MCDL) on either device, against PyTorch.
STEP_BENCH := $(BUILD)/bench_step
GPU_BENCH := $(BUILD)/bench_gpu

ifeq ($(NVCC),)
KERNEL_LIBS := $(EMU_LIB)
GPU_TARGETS :=
else
KERNEL_LIBS := $(GPU_LIB) $(CUDA_LDLIBS)
GPU_TARGETS := $(GPU_LIB) $(GPU_TESTS) $(GPU_BENCH)
endif

# The default test run leaves out the exhaustive sweeps (doctest suite "slow").
TEST_ARGS ?=

.PHONY: all test test-asan test-slow test-gpu test-gpu-sanitize bench bench-gpu demo deps check-deps clean cuda-note mpi
all: cuda-note $(LIB) $(TOOL_BINS) $(MPI_PLUGIN) $(TESTS) $(GPU_TARGETS) $(BENCH) $(STEP_BENCH)

cuda-note:
ifeq ($(NVCC),)
	@echo "nvcc not found: building a CPU-only engine (CUDA kernels are still tested through the emulator)."
endif

# Depends on the nvcc build too, so a kernel that stops compiling for the GPU fails CI.
test: $(TESTS) $(TOOL_BINS) $(MPI_PLUGIN) $(GPU_TARGETS)
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} ./$(TESTS) --test-suite-exclude=slow $(TEST_ARGS)
ifneq ($(NVCC),)
	@# The real nvcc binary too: natively where a GPU is present, otherwise it must say so and exit 0.
	./$(GPU_TESTS) --test-suite-exclude=slow $(TEST_ARGS)
endif

# The same suite (CPU backend and emulated kernels) under AddressSanitizer and UBSan, built in its
# own folder so that it never mixes with $(BUILD)/; any report fails the run. The tools that the
# tests run are instrumented builds too ($(ASAN_BUILD)/bin/, found through MCDL_TOOL_DIR), linked
# with the emulated kernels as a CPU-only build links them.
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer finds the dynamic TLS blocks of dlopen'd
# libraries (cuDNN, NVRTC) by a glibc 2.19 heuristic that newer glibc defeats now and then; it then
# scans a made-up range and crashes at exit ("Tracer caught signal 11" after every test passed;
# LLVM fixed it in 2023, google/sanitizers#1322). The cost: those libraries' dynamic TLS is not
# scanned for pointers (the engine's own thread_local data is static TLS and still is).
ASAN_BUILD := build-asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
test-asan:
	@# CXXFLAGS through the environment, so that the Makefile's own flags (-std, -Werror, ...) still append.
	CXXFLAGS="-O1 -g" $(MAKE) BUILD=$(ASAN_BUILD) SANITIZE="$(ASAN_FLAGS)" $(ASAN_BUILD)/mcdl_tests \
	  $(TOOL_BINS:%=$(ASAN_BUILD)/bin/%) $(MPI_PLUGIN)
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  MCDL_TOOL_DIR=$(CURDIR)/$(ASAN_BUILD)/bin ./$(ASAN_BUILD)/mcdl_tests --test-suite-exclude=slow $(TEST_ARGS)

test-slow: $(TESTS)
	@tools/install_deps.sh --quiet --slow
	./$(TESTS) --test-suite=slow $(TEST_ARGS)

test-gpu: $(GPU_TESTS)
	./$(GPU_TESTS) $(TEST_ARGS)

# The native GPU suite (without the suite "slow") under each of compute-sanitizer's tools
# (tools/gpu_sanitize.sh): memcheck with the leak check, racecheck, initcheck, synccheck. Any
# error a tool reports fails the target, after all four have run. Without a GPU (or without nvcc,
# so without the binary) it says so and exits 0, as test-gpu does.
SANITIZER_TOOLS := memcheck racecheck initcheck synccheck
ifeq ($(NVCC),)
test-gpu-sanitize:
	@echo "nvcc not found: no native GPU suite to sanitize; test-gpu-sanitize skipped."
else
test-gpu-sanitize: $(GPU_TESTS)
	@failed=""; for tool in $(SANITIZER_TOOLS); do \
	  tools/gpu_sanitize.sh ./$(GPU_TESTS) $$tool --test-suite-exclude=slow $(TEST_ARGS) || failed="$$failed $$tool"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-gpu-sanitize: errors from:$$failed"; exit 1; fi
endif

# The step benchmark on the CPU (ViT-B/16 at batch 16, as measured against Debian's PyTorch 1.13), in
# fp32 and in bf16 (PyTorch under CPU autocast; the engine where the processor has AVX512-BF16).
bench: $(BENCH) $(STEP_BENCH)
	./$(BENCH)
	python3 tools/bench_torch_step.py --device cpu --batch 16 --precisions fp32,bf16 --workloads forward,simgcd,mcdl \
	  --iterations 3 --warmup 1 --engine $(STEP_BENCH)

# PyTorch's timings of the same ops, where PyTorch and a GPU are present, give the ratio column.
bench-gpu: $(GPU_BENCH) $(STEP_BENCH)
	-python3 tools/bench_torch_gpu.py > $(BUILD)/torch_gpu_times.tsv
	./$(GPU_BENCH) $(BUILD)/torch_gpu_times.tsv
	python3 tools/bench_torch_step.py --device cuda --batch 128 --engine $(STEP_BENCH)

# k-means, SimGCD and SimGCD + MCDL (robust and paper) over seeds on Fashion-MNIST
# (DATASET=fmnist) or the CUB-like fmnist-pairs, on the GPU when present (tools/demo.sh):
# make demo DATASET=fmnist-pairs SEEDS="1 2 3" (MAX_TRAIN: the preset's when empty).
SEEDS ?= 1 2 3
DATASET ?= fmnist
MAX_TRAIN ?=
demo: check-deps mcdl_train
	DATASET="$(DATASET)" SEEDS="$(SEEDS)" MAX_TRAIN="$(MAX_TRAIN)" tools/demo.sh

# The MPI plugin (engine/mpi_plugin_api.h), built with OpenMPI's compiler wrapper and loaded at
# run time only by processes that an MPI launcher started, so nothing else links MPI.
mpi: $(MPI_PLUGIN)
$(MPI_PLUGIN): plugins/mpi/mpi_world.cpp engine/mpi_plugin_api.h | check-deps
	mpicxx -std=c++20 -O2 -g -Wall -Wextra -Werror -I. -shared -fPIC $< -o $@

deps:
	tools/install_deps.sh

# Order-only: runs before any compile, installs only what is missing (a quick check when
# everything is present).
check-deps:
	@tools/install_deps.sh --quiet

$(BUILD)/%.o: %.cpp | check-deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/emu/%.o: %.cu | check-deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -x c++ -c $< -o $@

$(BUILD)/gpu/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TOOL_LIB): $(TOOL_COMMON_SRCS:%.cpp=$(BUILD)/%.o)
	@rm -f $@
	ar rcs $@ $^

# Tools link the real CUDA library where nvcc exists (the CPU backend is always there).
$(TOOL_BINS): %: $(BUILD)/tools/%.o $(TOOL_LIB) $(LIB) $(filter %.a,$(KERNEL_LIBS))
	$(CXX) $(BUILD)/tools/$*.o $(TOOL_LIB) $(LIB) $(KERNEL_LIBS) $(LDLIBS) -o $@

# The tools against the emulated kernels, in $(BUILD)/bin/ (test-asan's instrumented copies).
$(BUILD)/bin/%: $(BUILD)/tools/%.o $(TOOL_LIB) $(LIB) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ $(LDLIBS) -o $@

# One folder's tests alone, for quick iteration: make build/tests_data && build/tests_data
.SECONDEXPANSION:
$(BUILD)/tests_%: $$(addprefix $(BUILD)/,$$(subst .cpp,.o,$$(wildcard tests/$$*/*.cpp))) $(BUILD)/tests/test_main.o \
                  $(BUILD)/tests/gradcheck.o $(BUILD)/tests/cuda/parity.o $(BUILD)/tests/main/emulated_device.o \
                  $(TOOL_LIB) $(LIB) $(EMU_LIB) | $(NCCL_EMU) $(CUDNN_EMU)
	$(CXX) $^ $(LDLIBS) -o $@

$(EMU_LIB): $(EMU_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(GPU_LIB): $(GPU_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TESTS): $(TEST_OBJS) $(BUILD)/tests/main/emulated_device.o $(TOOL_LIB) $(LIB) $(EMU_LIB) | $(NCCL_EMU) $(CUDNN_EMU)
	$(CXX) $^ $(LDLIBS) -o $@

# The emulated NCCL (kernels/emu/nccl_emu.cpp), which the emulator build loads at run time from
# next to its executable as the GPU build loads libnccl.so.2.
$(NCCL_EMU): kernels/emu/nccl_emu.cpp kernels/emu/nccl_api.h | check-deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -shared -fPIC $< -o $@

# The emulated cuDNN (kernels/emu/cudnn_emu.cpp), loaded the same way in place of libcudnn.so.9.
CUDNN_EMU_SRCS := kernels/emu/cudnn_emu.cpp kernels/emu/cudnn_emu_execute.cpp
$(CUDNN_EMU): $(CUDNN_EMU_SRCS) kernels/emu/cudnn_emu_graph.h kernels/emu/cudnn_api.h kernels/bf16.h | check-deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -shared -fPIC $(CUDNN_EMU_SRCS) -o $@

$(GPU_TESTS): $(GPU_TEST_SRCS:%.cpp=$(BUILD)/%.o) $(BUILD)/tests/main/gpu_device.o $(LIB) $(GPU_LIB)
	$(CXX) $^ $(CUDA_LDLIBS) $(LDLIBS) -o $@

$(BENCH): $(BUILD)/tools/bench_linear.o $(LIB) $(filter %.a,$(KERNEL_LIBS))
	$(CXX) $(BUILD)/tools/bench_linear.o $(LIB) $(KERNEL_LIBS) $(LDLIBS) -o $@

$(STEP_BENCH): $(BUILD)/tools/bench_step.o $(LIB) $(filter %.a,$(KERNEL_LIBS))
	$(CXX) $(BUILD)/tools/bench_step.o $(LIB) $(KERNEL_LIBS) $(LDLIBS) -o $@

$(GPU_BENCH): $(BUILD)/tools/bench_gpu.o $(LIB) $(GPU_LIB)
	$(CXX) $^ $(CUDA_LDLIBS) $(LDLIBS) -o $@

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(TOOL_BINS) $(MPI_PLUGIN)

-include $(TOOL_SRCS:%.cpp=$(BUILD)/%.d) $(TOOL_COMMON_SRCS:%.cpp=$(BUILD)/%.d) $(LIB_OBJS:.o=.d) $(EMU_OBJS:.o=.d) $(GPU_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BUILD)/tools/bench_linear.d $(BUILD)/tools/bench_gpu.d $(BUILD)/tools/bench_step.d

# Throughput of the CPU data pipeline (tools/bench_augment.cpp), then torchvision/Pillow's on the
# same sizes where python3 with torchvision is present (tools/bench_augment_torch.py).
BENCH_AUGMENT := $(BUILD)/bench_augment
all: $(BENCH_AUGMENT)
bench: bench-augment
.PHONY: bench-augment
bench-augment: $(BENCH_AUGMENT)
	./$(BENCH_AUGMENT)
	-python3 tools/bench_augment_torch.py

# The CPU GELU against the same formula with glibc's scalar erff, and the bf16 path's GELU and
# array conversions against their alternatives (tools/bench_gelu.cpp).
BENCH_GELU := $(BUILD)/bench_gelu
all: $(BENCH_GELU)
bench: bench-gelu
.PHONY: bench-gelu
bench-gelu: $(BENCH_GELU)
	./$(BENCH_GELU)

# Both CPU benchmarks link alike: their object with the library and the kernels.
$(BENCH_AUGMENT) $(BENCH_GELU): $(BUILD)/%: $(BUILD)/tools/%.o $(LIB) $(filter %.a,$(KERNEL_LIBS))
	$(CXX) $< $(LIB) $(KERNEL_LIBS) $(LDLIBS) -o $@
-include $(BUILD)/tools/bench_augment.d $(BUILD)/tools/bench_gelu.d

# ---- Fuzzing: `make fuzz FUZZ_SECONDS=N` -------------------------------------------------------
# libFuzzer targets (tests/fuzz/fuzz_<name>.cpp) for the parsers of outside bytes, built with
# clang++ and AddressSanitizer + UndefinedBehaviorSanitizer into build-fuzz/ (never mixed with
# build/). Each runs FUZZ_SECONDS over a scratch copy of its seed corpus (tests/fuzz/corpus/<name>)
# plus its regression inputs (tests/fuzz/regressions/<name>); any crash, sanitizer report,
# timeout or out-of-memory fails the run and leaves the input in build-fuzz/artifacts/<name>/.
FUZZ_CXX     ?= clang++
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CXXFLAGS := -std=c++20 -g -O1 -I. -isystem /usr/include/x86_64-linux-gnu/openblas-openmp -fopenmp \
                 $(FUZZ_SANITIZE) -MMD -MP
FUZZ_SRCS     := $(wildcard tests/fuzz/fuzz_*.cpp)
FUZZ_BINS     := $(FUZZ_SRCS:tests/fuzz/%.cpp=$(FUZZ_BUILD)/%)
# The library under test (the engine with its host kernels, io/ and data/; not layers/ or mcdl/,
# which no parser needs), compiled with the sanitizers but without libFuzzer's main.
FUZZ_LIB_SRCS := $(wildcard engine/*.cpp engine/*/*.cpp kernels/cpu/*.cpp io/*.cpp data/*.cpp data/*/*.cpp) \
                 tools/common/csv_table.cpp
FUZZ_LIB      := $(FUZZ_BUILD)/libmcdl_fuzz.a
# The emulated CUDA runtime the tensor code links against (device copies, conversions, profile
# ranges; never reached from the parsers, whose tensors live on the CPU). clang 14 cannot compile
# the emulator (no std::source_location), so these are built with $(CXX) and uninstrumented.
FUZZ_EMU_SRCS := kernels/cuda/runtime.cu kernels/cuda/upload_staging.cu kernels/cuda/copy.cu kernels/cuda/launch_config.cu
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.cpp=$(FUZZ_BUILD)/%.o) $(FUZZ_EMU_SRCS:%.cu=$(FUZZ_BUILD)/emu/%.o)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: $(FUZZ_BINS)
	tools/run_fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BUILD) $(FUZZ_BINS)

$(FUZZ_BUILD)/%.o: %.cpp | check-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -c $< -o $@

$(FUZZ_BUILD)/emu/%.o: %.cu | check-deps
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -O1 -g -fopenmp -I. -MMD -MP -x c++ -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.cpp $(FUZZ_LIB)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB) $(LDLIBS) -o $@

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_BINS:=.d)
