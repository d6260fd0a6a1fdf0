# The libFuzzer targets (tests/fuzz/fuzz_<name>.cpp, seeds in tests/fuzz/corpus/<name>/): built for
# fuzzing by tests/fuzz/CMakeLists.txt (the fuzz preset), and replayed over their corpora as ctest
# tests in every other preset by tests/CMakeLists.txt (fuzz.replay.<name>).
set(EZPZ_FUZZ_TARGETS hostlist machine_toml cli_args relay_wire archive)
