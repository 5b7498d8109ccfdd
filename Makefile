# MCDL engine. `make` builds everything, `make test` runs the test suite, `make bench`
# the benchmarks. Missing Debian packages are installed by tools/install_deps.sh first.
CXX      ?= g++
BUILD    ?= build
CXXFLAGS ?= -O2 -g
# OpenBLAS's OpenMP build, so that BLAS and the engine's own OpenMP loops share one thread
# pool (with the pthread build, idle OpenMP threads spin against BLAS threads: measured
# 10-30% slower linear layers on 2 cores).
OPENBLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
CXXFLAGS += -std=c++20 -fopenmp -Wall -Wextra -Werror -I. -isystem /usr/include/x86_64-linux-gnu/openblas-openmp -MMD -MP
LDLIBS   += -L$(OPENBLAS_DIR) -Wl,-rpath,$(OPENBLAS_DIR) -lopenblas -fopenmp -lz

NVCC := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })

LIB_SRCS  := $(wildcard engine/*.cpp engine/*/*.cpp kernels/cpu/*.cpp layers/*.cpp data/*.cpp mcdl/*.cpp)
TEST_SRCS := $(wildcard tests/*.cpp tests/*/*.cpp)
LIB_OBJS  := $(LIB_SRCS:%.cpp=$(BUILD)/%.o)
TEST_OBJS := $(TEST_SRCS:%.cpp=$(BUILD)/%.o)
LIB       := $(BUILD)/libmcdl.a
TESTS     := $(BUILD)/mcdl_tests
BENCH     := $(BUILD)/bench_linear

# The default test run leaves out the exhaustive sweeps (doctest suite "slow").
TEST_ARGS ?=

.PHONY: all test test-slow bench demo deps check-deps clean cuda-note
all: $(LIB) $(TESTS) $(BENCH) cuda-note

cuda-note:
ifeq ($(NVCC),)
	@echo "nvcc not found: building the CPU-only engine."
else
	@echo "nvcc found at $(NVCC); the CUDA backend is not part of this engine version yet, so the build is CPU-only."
endif

test: $(TESTS)
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} ./$(TESTS) --test-suite-exclude=slow $(TEST_ARGS)

test-slow: $(TESTS)
	./$(TESTS) --test-suite=slow $(TEST_ARGS)

bench: $(BENCH)
	./$(BENCH)

demo:
	@echo "make demo: the trainer (./mcdl_train fmnist on the CPU) is not part of this engine version yet;" >&2
	@echo "this version provides the engine core only: run 'make test' and 'make bench'." >&2
	@exit 2

deps:
	tools/install_deps.sh

# Order-only: runs before any compile, installs only what is missing (a quick check when
# everything is present).
check-deps:
	@tools/install_deps.sh --quiet

$(BUILD)/%.o: %.cpp | check-deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TESTS): $(TEST_OBJS) $(LIB)
	$(CXX) $(TEST_OBJS) $(LIB) $(LDLIBS) -o $@

$(BENCH): $(BUILD)/tools/bench_linear.o $(LIB)
	$(CXX) $^ $(LDLIBS) -o $@

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BUILD)/tools/bench_linear.d
