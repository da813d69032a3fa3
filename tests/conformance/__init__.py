"""ONNX backend node-test conformance: runner, expectations (the ratchet) and the CI sample."""
