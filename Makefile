# Thin wrapper over CMake: `make run` installs what is missing, builds Release and runs the default
# scenario; `make test` builds and runs the whole test suite through ctest.
BUILD ?= build
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/default.json
OUT ?= out

.PHONY: deps build run test bench clean

deps:
	@./scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: deps build
	./$(BUILD)/servesim run $(SCENARIO) --out $(OUT)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Speed and memory (bench/million.sh: 1M and 10M requests on one core) and the 200-scenario sweep
# on 1 vs 2 threads, then on 1 vs 2 MPI ranks where mpirun exists. Minutes, not seconds: never
# part of `make test`.
bench: build
	./bench/million.sh 1000000 10000000
	./bench/sweep200.sh
	if command -v mpirun >/dev/null; then ./bench/sweep200_mpi.sh; fi

clean:
	rm -rf $(BUILD) $(OUT)
