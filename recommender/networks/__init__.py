"""Networks into Relax: the shipped zoo, ONNX, Relax JSON and torch.export files."""
