"""cohort_fuzz_test: a libFuzzer target that is also a corpus replay test."""

def cohort_fuzz_test(name, srcs, corpus, deps = [], size = "small", **kwargs):
    """Declares fuzz target `name`.

    Built normally (and under --config=asan), it is a cc_test that runs
    LLVMFuzzerTestOneInput once on every file under `corpus` (the committed
    seeds and crash reproducers). Built with --config=fuzz (clang), it links
    libFuzzer's main instead, and bench/fuzz.sh runs it as a fuzzer over a
    copy of the same corpus.

    Args:
      name: target name; by convention <thing>_fuzzer.
      srcs: sources defining LLVMFuzzerTestOneInput.
      corpus: folder (relative to the package) of seed inputs.
      deps: libraries the target needs.
      size: test size.
      **kwargs: passed to cc_test.
    """
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs,
        args = [native.package_name() + "/" + corpus],
        data = native.glob([corpus + "/**"]),
        linkopts = select({
            "//tools/fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + select({
            "//tools/fuzz:libfuzzer": [],
            "//conditions:default": ["//tools/fuzz:replay_main"],
        }),
        **kwargs
    )
