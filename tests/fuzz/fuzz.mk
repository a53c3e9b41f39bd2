# Fuzzing (included by the Makefile).
#   make fuzz                    build, then fuzz the RPC target for FUZZ_SECONDS (default 3600)
#   make fuzz FUZZ_SECONDS=60    the bounded run `make test` does
#   make fuzz-index              the same for the index target (fuzz_index.c: a
#                                damaged index, opened and used by the store)
#   FUZZ_TIMEOUT (seconds, wall clock, default 10): raise it for a niced run
#   sharing the machine, where a unit can wait seconds for the CPU
# libFuzzer with clang, ASan+UBSan, into build-fuzz/. The corpus grows in
# build-fuzz/corpus (seeded from gen_corpus); crashes land in build-fuzz/
# and are kept as regression inputs in tests/fuzz/regress/, replayed by
# tests/integ/90-fuzz.sh.
FUZZ_SECONDS ?= 3600
FUZZ_TIMEOUT ?= 10
FUZZ_DIR     := build-fuzz
FUZZ_SRCS    := tests/fuzz/fuzz_rpc.c $(wildcard proto/*.c) cachefsd/base/loop.c cachefsd/base/config.c \
                cachefsd/base/log.c
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -Iinclude -Wall -Wextra -Werror \
                -fsanitize=fuzzer,address,undefined -fno-sanitize=alignment \
                -fno-sanitize-recover=all

FUZZ_INDEX_SRCS := tests/fuzz/fuzz_index.c $(wildcard cachefsd/store/*.c) cachefsd/base/log.c

.PHONY: fuzz fuzz-build fuzz-index
fuzz-build: $(FUZZ_DIR)/fuzz_rpc $(FUZZ_DIR)/gen_corpus $(FUZZ_DIR)/fuzz_index

$(FUZZ_DIR)/fuzz_rpc: $(FUZZ_SRCS) $(wildcard include/*.h proto/*.h)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_FLAGS) -o $@ $(FUZZ_SRCS) -lnfs -lxxhash

$(FUZZ_DIR)/fuzz_index: $(FUZZ_INDEX_SRCS) $(wildcard include/*.h cachefsd/store/store_int.h)
	@mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_FLAGS) -o $@ $(FUZZ_INDEX_SRCS) -llmdb -lxxhash -lnfs -lpthread

# proto/nlm.c: the NLM shapes libnfs lacks (SHARE, FREE_ALL)
$(FUZZ_DIR)/gen_corpus: tests/fuzz/gen_corpus.c proto/nlm.c
	@mkdir -p $(FUZZ_DIR)
	$(CC) -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror -Iinclude -o $@ $^ -lnfs

fuzz: deps-test fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus
	$(FUZZ_DIR)/gen_corpus $(FUZZ_DIR)/corpus
	cd $(FUZZ_DIR) && ./fuzz_rpc -max_total_time=$(FUZZ_SECONDS) -max_len=70000 \
		-timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 -print_final_stats=1 corpus ../tests/fuzz/regress

# seeds: the kept inputs (the issue's truncations and junk pages among them)
fuzz-index: deps-test fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus-index
	cp tests/fuzz/regress-index/* $(FUZZ_DIR)/corpus-index/
	rm -f $(FUZZ_DIR)/corpus-index/README
	cd $(FUZZ_DIR) && ./fuzz_index -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 -print_final_stats=1 corpus-index
