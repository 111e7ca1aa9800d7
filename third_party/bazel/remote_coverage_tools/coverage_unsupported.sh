#!/bin/sh
# Stand-in for Bazel's coverage tools, which would be downloaded.
echo "bazel coverage is not supported in this offline workspace" >&2
exit 1
