#!/bin/bash
# A damaged index, fuzzed: tests/fuzz/fuzz_index.c damages a copy of a real
# index (truncations, junk pages, header fields, zeroed ranges), then the
# store opens it and uses it as the daemon does, under ASan+UBSan, for
# FUZZ_TEST_SECONDS (default 60); the kept inputs in
# tests/fuzz/regress-index/ (the issue's cases among them) replay first.
exec env FUZZ_TARGET=index "$(dirname "$0")/90-fuzz.sh"
