// Only the header matters: libFuzzer itself is linked by `-sanitize=fuzzer`.
