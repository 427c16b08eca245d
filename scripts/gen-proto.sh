#!/usr/bin/env bash
# Regenerates Sources/ENProtocol/KeyExport/export.pb.swift from export.proto.
# The generated file is committed so that builds need neither protoc nor the plugin.
#
# Needs: protoc (apt: protobuf-compiler) and protoc-gen-swift at the SAME version as the
# swift-protobuf package the build resolves (see Package.swift; 1.39.0 when this was written).
# To get protoc-gen-swift, build it from that package:
#   git clone --branch 1.39.0 https://github.com/apple/swift-protobuf /tmp/swift-protobuf
#   (cd /tmp/swift-protobuf && swift build -c release --product protoc-gen-swift)
#   cp /tmp/swift-protobuf/.build/release/protoc-gen-swift /usr/local/bin/
set -euo pipefail
cd "$(dirname "$0")/.."
dir=Sources/ENProtocol/KeyExport
command -v protoc >/dev/null || { echo "protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
command -v protoc-gen-swift >/dev/null || { echo "protoc-gen-swift not found (see the comment at the top of $0)" >&2; exit 1; }
echo "protoc-gen-swift $(protoc-gen-swift --version 2>&1 | awk '{print $NF}')" >&2
# Internal visibility (the default): callers use KeyExport's own types, not the wire messages.
protoc --proto_path="$dir" --swift_out="$dir" "$dir/export.proto"
echo "wrote $dir/export.pb.swift" >&2
