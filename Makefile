# Thin wrapper over CMake: `make run` installs what is missing, builds Release and runs the default
# scenario; `make test` builds and runs the whole test suite through ctest.
BUILD ?= build
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/default.json
OUT ?= out

.PHONY: deps build run test clean

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

clean:
	rm -rf $(BUILD) $(OUT)
